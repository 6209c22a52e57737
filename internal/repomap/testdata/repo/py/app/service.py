from app.models.item import ItemModel
from . import util


def list_models() -> list[ItemModel]:
    return [ItemModel()]
