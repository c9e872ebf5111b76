"""servesim.analysis"""
