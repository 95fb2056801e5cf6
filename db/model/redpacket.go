package model

import "time"

// Red packet statuses.
const (
	RedPacketActive   = "active"
	RedPacketFinished = "finished" // every share claimed and flushed
	RedPacketExpired  = "expired"  // unclaimed shares refunded
)

// Red packet modes.
const (
	RedPacketRandom = "random" // double-mean split: shares differ, each at least 1 cent
	RedPacketFixed  = "fixed"  // equal shares
)

// NewRedPacket is what a merchant asks for.
type NewRedPacket struct {
	Title      string  `json:"title"`
	TotalCents int64   `json:"total_cents"`
	Count      int64   `json:"count"`
	Mode       string  `json:"mode"`
	ExpiresIn  *string `json:"expires_in"` // a Go duration; nil (left out) means the default expiry (24h)
}

// RedPacket is a merchant's packet with its live remaining figures.
type RedPacket struct {
	ID             int64     `json:"id"`
	Title          string    `json:"title"`
	TotalCents     int64     `json:"total_cents"`
	Count          int64     `json:"count"`
	Mode           string    `json:"mode"`
	RemainingCount int64     `json:"remaining_count"`
	RemainingCents int64     `json:"remaining_cents"`
	Status         string    `json:"status"`
	ExpiresAt      time.Time `json:"expires_at"`

	OwnerID       int64     `json:"-"`
	ClaimedCount  int64     `json:"-"` // claims flushed to SQLite
	RefundedCents int64     `json:"-"`
	CreatedAt     time.Time `json:"-"`
}

// RedPacketGrab is what a user won.
type RedPacketGrab struct {
	RedPacketID int64     `json:"redpacket_id"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
}

// RedPacketClaim is one grab as everyone sees it.
type RedPacketClaim struct {
	UserID      int64     `json:"user_id"`
	Username    string    `json:"username"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
	Seq         int64     `json:"-"` // the share's place in grab order
}

// RedPacketGrabs lists a packet's grabs in grab order and names the luckiest (largest, earliest on a tie).
type RedPacketGrabs struct {
	Grabs          []RedPacketClaim `json:"grabs"`
	LuckiestUserID *int64           `json:"luckiest_user_id"`
}

// RedPacketStats sets the live figures from Redis beside the durable ones from SQLite.
type RedPacketStats struct {
	Count          int64 `json:"count"`
	Claimed        int64 `json:"claimed"` // grabs decided in Redis
	Flushed        int64 `json:"flushed"` // of those, written to SQLite
	RemainingCount int64 `json:"remaining_count"`
	RemainingCents int64 `json:"remaining_cents"`
	RefundedCents  int64 `json:"refunded_cents"`
}

// RedPacketEvent is the live event on live.TopicRedPacket after a change.
type RedPacketEvent struct {
	Type           string `json:"type"` // always "redpacket"
	RedPacketID    int64  `json:"redpacket_id"`
	RemainingCount int64  `json:"remaining_count"`
}

// RedPacketView is a packet as its shopper page shows it: the packet, its grabs and the caller's own grab.
type RedPacketView struct {
	Packet *RedPacket
	Grabs  *RedPacketGrabs
	Mine   *RedPacketClaim // nil when the caller has not grabbed (or is anonymous)
}

// RedPacketAdminView is a packet as its merchant's detail page shows it.
type RedPacketAdminView struct {
	Packet *RedPacket
	Stats  *RedPacketStats
	Grabs  *RedPacketGrabs
}

// RedPacketWinning is what a user got from one packet, for their wallet.
type RedPacketWinning struct {
	RedPacketID int64     `json:"redpacket_id"`
	Title       string    `json:"title"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
}
