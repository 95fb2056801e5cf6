package account

// Test-only doors into the account internals, for the external account_test package.

// Hold takes one of the pool's slots until the returned func is called.
func (p *HashPool) Hold() func() {
	p.slots <- struct{}{}
	return p.release
}

// SetLimit lowers how many picks l holds whole (localesMax).
func (l *Locales) SetLimit(n int) { l.limit = n }

// OnHeard has l call f with each announced pick once it has taken it; set
// it before Open.
func (l *Locales) OnHeard(f func(userID int64)) { l.heard = f }
