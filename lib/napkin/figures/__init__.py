"""Chart builders, one module per chapter; each returns a napkin Figure."""
