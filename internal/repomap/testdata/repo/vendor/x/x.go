package x

func Vendored() {}
