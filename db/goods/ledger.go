package goods

// Ledger keeps the orders.
type Ledger struct {
	*Sale
}
