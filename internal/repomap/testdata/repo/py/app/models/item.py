class ItemModel:
    """An item row."""

    def to_dict(self):
        return {}
