"""servesim.policies"""
