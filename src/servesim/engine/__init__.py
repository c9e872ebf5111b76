"""servesim.engine"""
