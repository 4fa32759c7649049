"""Perceptual memory: media encoders per modality."""
