package views

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views/i18n"
)

// DetailField is one field of an entry's detail: its name and value in
// the reader's words, or an instant (At) the page shows in the reader's
// zone and language.
type DetailField struct {
	Name, Value string
	At          *time.Time
}

// auditField is how the audit log names a field the forms and the API
// send, and what its value is: money, an instant, a yes or no, a choice.
type auditField struct {
	name string
	kind string // "money", "time", "bool", "choice", "id", "seconds", "ms" or "" (as typed)
}

// auditFields are the fields an entry's detail may hold, in the order the
// page lists them. Money sent by a form is yuan as typed ("299.00"); sent
// as JSON, it is cents (29900).
var auditFields = []struct {
	key string
	auditField
}{
	{"title", auditField{"Title", ""}},
	{"description", auditField{"Description", ""}},
	{"username", auditField{"Username", ""}},
	{"role", auditField{"Role", "choice"}},
	{"kind", auditField{"Kind", "choice"}},
	{"mode", auditField{"Sale mode", "choice"}},
	{"value", auditField{"Value", "money"}},
	{"price_cents", auditField{"List price", "money"}},
	{"seckill_price_cents", auditField{"Seckill price", "money"}},
	{"total", auditField{"Total", "money"}},
	{"total_cents", auditField{"Total", "money"}},
	{"amount_cents", auditField{"Amount", "money"}},
	{"refunded_cents", auditField{"Refunded", "money"}},
	{"min_spend", auditField{"Minimum spend", "money"}},
	{"min_spend_cents", auditField{"Minimum spend", "money"}},
	{"stock", auditField{"Stock", ""}},
	{"count", auditField{"Shares", ""}},
	{"limit_per_user", auditField{"Limit per shopper", ""}},
	{"start_at", auditField{"Starts", "time"}},
	{"end_at", auditField{"Ends", "time"}},
	{"entry_start_at", auditField{"Entries open", "time"}},
	{"grab_start_at", auditField{"Grabs open", "time"}},
	{"grab_end_at", auditField{"Grabs close", "time"}},
	{"expires_at", auditField{"Expires", "time"}},
	{"expires_in", auditField{"Expires in", "choice"}},
	{"valid_days", auditField{"Valid days after grab", ""}},
	{"demand", auditField{"Expected demand", "choice"}},
	{"shards", auditField{"Stock shards", ""}},
	{"queue_rate", auditField{"Let in per second", ""}},
	{"admission_seconds", auditField{"Time to buy once let in", "seconds"}},
	{"pow_bits", auditField{"Anti-bot check difficulty", ""}},
	{"preregistered_only", auditField{"Only shoppers who booked a reminder", "bool"}},
	{"hidden", auditField{"Hidden", "bool"}},
	{"rehearsal", auditField{"Rehearsal", "bool"}},
	{"reason", auditField{"Reason", ""}},
	{"email", auditField{"Email", ""}},
	{"webhook_url", auditField{"Webhook URL", ""}},
	{"slot_id", auditField{"Slot", "id"}},
	{"goods_id", auditField{"Goods", "id"}},
	{"coupon_id", auditField{"Coupon", "id"}},
	{"redpacket_id", auditField{"Red packet", "id"}},
	{"order_id", auditField{"Order", "id"}},
	{"sale_paused", auditField{"Pause the sale", "bool"}},
	{"live_charts", auditField{"Live charts", "bool"}},
	{"reminders_paused", auditField{"Hold reminders", "bool"}},
	{"merchant_read_only", auditField{"Read-only merchants", "bool"}},
	{"stock_push_ms", auditField{"Stock push interval", "ms"}},
	{"pow_floor_bits", auditField{"Anti-bot check minimum difficulty", ""}},
}

// auditSkipped are fields that say nothing about the change: the form's
// plumbing and the browser's time zone (its times are read with it).
var auditSkipped = map[string]bool{"tz_offset": true, "back": true, "next": true, "lang": true, "viewport": true, "image": true}

// auditChoices name the values of a choice field in words.
var auditChoices = map[string]map[string]string{
	"kind": {model.CouponAmountOff: "Amount off", model.CouponPercentOff: "Percent off"},
	"mode": {model.ModeFirstCome: "First come, first served", model.ModeQueue: "Waiting room (queue)", model.ModeRaffle: "Raffle (draw)", model.RedPacketRandom: "Random", model.RedPacketFixed: "Fixed (equal)"},
	"role": {model.RoleAdmin: "admin", model.RoleMerchant: "merchant", model.RoleUser: "user"},
}

func init() {
	for _, d := range Demands {
		if auditChoices["demand"] == nil {
			auditChoices["demand"] = map[string]string{}
		}
		auditChoices["demand"][d.Value] = d.Label
	}
	auditChoices["expires_in"] = map[string]string{ExpiresAtChoice: "At a date and time"}
	for _, e := range RedPacketExpiries {
		auditChoices["expires_in"][e.Value] = e.Label
	}
}

// DetailFields are what the entry changed, in the reader's words and units:
// the fields sent (a form's or the API's, secrets left out when recorded),
// each named as the pages name it, money in yuan, instants in the reader's
// zone, choices and yes or no in words; empty fields and the form's
// plumbing are left out. A detail that is no JSON object is one field
// without a name.
func (r AuditRow) DetailFields(ctx context.Context) []DetailField {
	if r.Detail == "" {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.Detail), &obj); err != nil {
		return []DetailField{{Value: T(ctx, r.Detail)}}
	}
	tz := 0
	if s, ok := obj["tz_offset"].(string); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= -24*60 && n <= 24*60 {
			tz = n
		}
	}
	percent := obj["kind"] == model.CouponPercentOff
	type ranked struct {
		rank int
		DetailField
	}
	var out []ranked
	for k, v := range obj {
		if auditSkipped[k] {
			continue
		}
		f, rank := auditField{name: strings.ReplaceAll(k, "_", " ")}, len(auditFields)
		for i, af := range auditFields {
			if af.key == k {
				f, rank = af.auditField, i
				break
			}
		}
		if k == "value" && percent {
			f.kind = "percent"
		}
		d, ok := f.show(ctx, k, v, tz)
		if !ok {
			continue
		}
		d.Name = T(ctx, f.name)
		out = append(out, ranked{rank, d})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].rank != out[j].rank {
			return out[i].rank < out[j].rank
		}
		return out[i].Name < out[j].Name
	})
	fields := make([]DetailField, len(out))
	for i, o := range out {
		fields[i] = o.DetailField
	}
	return fields
}

// show is one field's value in the reader's words; not ok when it is empty.
func (f auditField) show(ctx context.Context, key string, v any, tz int) (DetailField, bool) {
	var s string
	switch v := v.(type) {
	case nil:
		return DetailField{}, false
	case string:
		s = strings.TrimSpace(v)
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		if f.kind == "money" {
			return DetailField{Value: Money(int64(v))}, true // JSON: cents
		}
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			if d, ok := f.show(ctx, key, x, tz); ok {
				parts = append(parts, d.Value)
			}
		}
		if len(parts) == 0 {
			return DetailField{}, false
		}
		return DetailField{Value: strings.Join(parts, i18nList(ctx))}, true
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if s == "" {
		return DetailField{}, false
	}
	if from, to, ok := strings.Cut(s, " → "); ok { // a switch changed: "false → true"
		a, _ := f.word(ctx, key, from, tz)
		b, _ := f.word(ctx, key, to, tz)
		return DetailField{Value: a.Value + " → " + b.Value}, true
	}
	return f.word(ctx, key, s, tz)
}

// word is one value of the field as the reader says it.
func (f auditField) word(ctx context.Context, key, s string, tz int) (DetailField, bool) {
	switch f.kind {
	case "money":
		if y, ok := yuanTyped(s); ok {
			return DetailField{Value: y}, true
		}
	case "percent":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return DetailField{Value: T(ctx, strconv.FormatInt(n, 10)+"% off")}, true
		}
	case "time":
		if t, ok := typedTime(s, tz); ok {
			return DetailField{At: &t}, true
		}
	case "bool":
		switch strings.ToLower(s) {
		case "true", "on", "1", "yes":
			return DetailField{Value: T(ctx, "Yes")}, true
		case "false", "off", "0", "no":
			return DetailField{Value: T(ctx, "No")}, true
		}
	case "choice":
		if w, ok := auditChoices[key][s]; ok {
			return DetailField{Value: T(ctx, w)}, true
		}
	case "id":
		if key == "order_id" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return DetailField{Value: "#" + model.OrderNumber(n)}, true
			}
		}
		return DetailField{Value: "#" + s}, true
	case "seconds":
		return DetailField{Value: F(ctx, "%s s", s)}, true
	case "ms":
		return DetailField{Value: F(ctx, "%s ms", s)}, true
	}
	return DetailField{Value: s}, true
}

var typedYuan = regexp.MustCompile(`^-?\d+(\.\d{1,2})?$`)

// yuanTyped is an amount a form sent as typed in yuan ("299", "9.9"), written as ¥299.00.
func yuanTyped(s string) (string, bool) {
	if !typedYuan.MatchString(s) {
		return "", false
	}
	sign, digits := "", s
	if strings.HasPrefix(s, "-") {
		sign, digits = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(digits, ".")
	n, err := strconv.ParseInt(whole+(frac + "00")[:2], 10, 64)
	if err != nil {
		return "", false
	}
	return sign + Money(n), true
}

// typedTime reads an instant a form sent (datetime-local in a browser tz
// minutes behind UTC) or the API sent (RFC 3339).
func typedTime(s string, tz int) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), true
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Add(time.Duration(tz) * time.Minute).UTC(), true
		}
	}
	return time.Time{}, false
}

// i18nList is the separator of a list in the reader's language.
func i18nList(ctx context.Context) string {
	if i18n.Of(ctx) == i18n.Zh {
		return "、"
	}
	return ", "
}
