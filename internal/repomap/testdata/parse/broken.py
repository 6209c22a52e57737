def ok():
    return 1

class Broken(:
    def method(self
        pass

def after(x) -> int:
    s = "unterminated
    return x
