"""servesim.sim"""
