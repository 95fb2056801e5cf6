package views

import (
	"fmt"
	"time"

	"github.com/a-h/templ"
	"github.com/seckill/seckill/db"
)

// RedPacketCard is a red packet as lists and headers show it.
type RedPacketCard struct {
	ID             int64
	Title          string
	TotalCents     int64
	Count          int64
	Mode           string
	RemainingCount int64
	RemainingCents int64
	Status         string
	ExpiresAt      time.Time
	// MineCents is what the viewing shopper got from it (0: not opened by them).
	MineCents int64
}

// Path is the shopper page of the packet.
func (c RedPacketCard) Path() string { return fmt.Sprintf("/redpackets/%d", c.ID) }

// AdminPath is the merchant page of the packet.
func (c RedPacketCard) AdminPath() string { return fmt.Sprintf("/admin/redpackets/%d", c.ID) }

// RedPacketGrabRow is one grab in a packet's list.
type RedPacketGrabRow struct {
	UserID      int64
	Username    string
	AmountCents int64
	GrabbedAt   time.Time
	Luckiest    bool
	Mine        bool
}

// RedPacketDetail is the shopper page of a packet.
type RedPacketDetail struct {
	Packet        RedPacketCard
	Grabs         []RedPacketGrabRow
	MyAmountCents int64 // 0 when the visitor has not grabbed
	LoggedIn      bool
	UserID        int64 // the visitor, 0 when anonymous
}

// RedPacketForm is the state of the merchant's create form; Field names the input the Error belongs to.
type RedPacketForm struct {
	Title     string
	Total     string // yuan, e.g. "88.88"
	Count     string
	Mode      string
	ExpiresIn string         // a RedPacketExpiries value, ExpiresAtChoice, or a duration typed elsewhere ("90m")
	ExpiresAt string         // the date and time when ExpiresIn is ExpiresAtChoice, as typed
	Errors    db.FieldErrors // a message beside each field at fault
	Error     string         // a problem that is no field's, above the form
}

// ErrorFor returns the field's error message ("" when it has none).
func (f RedPacketForm) ErrorFor(field string) string { return f.Errors[field] }

// RedPacketStats are the merchant's figures for a packet.
type RedPacketStats struct {
	Count, Claimed, Flushed, RemainingCount, RemainingCents, RefundedCents int64
}

// AdminRedPacketDetail is the merchant page of a packet.
type AdminRedPacketDetail struct {
	Packet RedPacketCard
	Stats  RedPacketStats
	Grabs  []RedPacketGrabRow
}

func rpInt(n int64) string { return fmt.Sprint(n) }

func rpRFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// rpSharesFormat is "¥88.88 in 10 random shares" as a format of the total
// and the count, one per split (each translated whole).
func rpSharesFormat(mode string) string {
	if mode == "fixed" {
		return "%s in %d equal shares"
	}
	return "%s in %d random shares"
}

func rpBarStyle(claimed, count int64) templ.SafeCSS {
	pct := int64(0)
	if count > 0 {
		pct = 100 * claimed / count
	}
	return templ.SafeCSS(fmt.Sprintf("width: %d%%;", pct))
}

// ExpiryChoice is one of the red packet form's "Expires in" choices: the
// API's expires_in (a Go duration) and what the merchant reads.
type ExpiryChoice struct {
	Value string
	Label string
}

// RedPacketExpiries are the durations the red packet form offers.
var RedPacketExpiries = []ExpiryChoice{
	{Value: "1h", Label: "1 hour"},
	{Value: "6h", Label: "6 hours"},
	{Value: "24h", Label: "24 hours"},
	{Value: "72h", Label: "3 days"},
	{Value: "168h", Label: "7 days"},
}

// ExpiresAtChoice is the "Expires in" choice that reads the date and time field instead.
const ExpiresAtChoice = "at"

// otherExpiry is a duration posted that is none of the choices (an old
// bookmark, a script), kept as its own option so the form shows it again.
func otherExpiry(v string) bool {
	if v == "" || v == ExpiresAtChoice {
		return false
	}
	for _, c := range RedPacketExpiries {
		if c.Value == v {
			return false
		}
	}
	return true
}
