package model

import "time"

// Payment methods a provider may offer (PAYMENT_METHODS).
const (
	MethodCard      = "card"
	MethodAlipay    = "alipay"
	MethodWeChatPay = "wechat_pay"
)

// Trade is what a checkout asks the payment provider to open for one order.
type Trade struct {
	OrderID     int64
	Title       string
	AmountCents int64
	Currency    string
	Method      string
	// ExpiresAt is when the provider closes the trade on its own, at the
	// latest; the order's expiry closes it earlier.
	ExpiresAt  time.Time
	SuccessURL string
	CancelURL  string
	// Key makes a retry open the same trade, never a second one.
	Key string
}

// Checkout is a trade opened at the provider, as the shopper is sent to it:
// a URL to follow (card, Alipay) or a QR code to show (WeChat Pay, a data URL).
type Checkout struct {
	Method      string    `json:"method"`
	ProviderRef string    `json:"provider_ref"`
	URL         string    `json:"url,omitempty"`
	QRCode      string    `json:"qr_code,omitempty"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Trade states as the provider tells them.
const (
	TradeOpen     = "open"     // the shopper may still pay
	TradePaid     = "paid"     // the money is taken
	TradePending  = "pending"  // completed, the money not confirmed yet (an asynchronous method)
	TradeClosed   = "closed"   // closed unpaid: no payment can follow
	TradeRefunded = "refunded" // paid and given back
)

// TradeState is where a trade stands at the provider.
type TradeState struct {
	Ref           string
	State         string // TradeOpen, TradePaid, TradePending or TradeClosed
	PaymentIntent string
	AmountCents   int64
	Currency      string
}

// ProviderEvent is a verified provider notification about a trade.
type ProviderEvent struct {
	ID   string
	Type string
	// Paid is true for an event that says the trade's money is taken.
	Paid          bool
	Ref           string
	OrderID       int64
	AmountCents   int64
	Currency      string
	PaymentIntent string
}

// ProviderPayment is one payment the provider holds, for reconciliation.
type ProviderPayment struct {
	Ref           string // the trade (the Checkout Session's ID)
	PaymentIntent string
	OrderID       int64 // 0: not one of ours
	AmountCents   int64
	RefundedCents int64
	Currency      string
	CreatedAt     time.Time
}

// ProviderRefund is a refund asked of the provider.
type ProviderRefund struct {
	ID     string
	Status string // pending, succeeded, failed, canceled, requires_action
}
