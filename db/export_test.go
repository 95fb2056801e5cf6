package db

// Test-only doors into the internals, for the external db_test package.

// Hold takes one of the pool's slots until the returned func is called.
func (p *HashPool) Hold() func() {
	p.slots <- struct{}{}
	return p.release
}
