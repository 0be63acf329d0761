"""What a device should do: peak figures, performance and bank models, limits."""
