"""servesim.forecast"""
