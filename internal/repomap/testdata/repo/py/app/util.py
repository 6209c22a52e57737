def slugify(name):
    return name
