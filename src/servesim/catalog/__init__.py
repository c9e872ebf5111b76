"""servesim.catalog"""
