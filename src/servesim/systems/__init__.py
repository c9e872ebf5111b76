"""servesim.systems"""
