class Generated: pass
