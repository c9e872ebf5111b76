"""servesim.fleet"""
