package account

// Test-only doors into the account internals, for the external account_test package.

// Hold takes one of the pool's slots until the returned func is called.
func (p *HashPool) Hold() func() {
	p.slots <- struct{}{}
	return p.release
}
