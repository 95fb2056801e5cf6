package views

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views/i18n"
)

// AuditRow is one audit log entry as the audit page shows it.
type AuditRow struct {
	ID      int64
	At      time.Time
	ActorID int64
	Actor   string
	Action  string
	Target  string
	Detail  string
	IP      string
}

// AuditView is one page of the audit log, newest first.
type AuditView struct {
	Entries     []AuditRow
	OlderBefore int64 // the before= of the next, older page; 0 when this is the last
}

// OlderPath links the next, older page.
func (v AuditView) OlderPath() string {
	return "/admin/audit?before=" + strconv.FormatInt(v.OlderBefore, 10)
}

// auditVerbs name an action's verb the way a person says it.
var auditVerbs = map[string]string{
	"create": "Created", "update": "Changed", "delete": "Deleted", "end": "Ended",
	"hidden": "Hid or showed", "image": "New picture for", "refund": "Refunded",
	"login": "Signed in", "login_failed": "Sign-in failed", "register": "Signed up",
	"register_failed": "Sign-up failed", "logout": "Signed out",
}

// auditKinds name a target's kind.
var auditKinds = map[string]string{
	"goods": "goods", "slot": "slot", "coupon": "coupon", "redpacket": "red packet",
	"order": "order", "user": "user", "setting": "settings", "switch": "switches",
}

// codeAttrs keep an entry's code (goods.create, goods:12) in its cell: as
// the title in English, where the tests read it; in Chinese as data-code,
// which shows no Latin words on the Chinese page.
func codeAttrs(ctx context.Context, code string) templ.Attributes {
	if i18n.Of(ctx) == i18n.En {
		return templ.Attributes{"title": code, "data-code": code}
	}
	return templ.Attributes{"data-code": code}
}

// ActionLabel is the action in words in the reader's language ("Created
// goods", "Signed in"; 新建商品, 登录); the code (goods.create) stays in the
// page (codeAttrs).
func (r AuditRow) ActionLabel(ctx context.Context) string { return T(ctx, r.actionLabel()) }

// actionLabel is the action in English words.
func (r AuditRow) actionLabel() string {
	kind, verb, ok := strings.Cut(r.Action, ".")
	if !ok {
		return r.Action
	}
	v, known := auditVerbs[verb]
	if !known {
		v = strings.ReplaceAll(verb, "_", " ")
	}
	if kind == "auth" {
		return v
	}
	if k, ok := auditKinds[kind]; ok {
		kind = k
	}
	return v + " " + kind
}

// TargetLabel is what the action was on, as the pages name it: an order
// by its number (G20-0001), others by kind and number.
func (r AuditRow) TargetLabel(ctx context.Context) string { return T(ctx, r.targetLabel()) }

func (r AuditRow) targetLabel() string {
	kind, id, ok := strings.Cut(r.Target, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil {
		return r.Target
	}
	if kind == "order" {
		return "Order " + model.OrderNumber(n)
	}
	if k, ok := auditKinds[kind]; ok {
		kind = k
	}
	return strings.ToUpper(kind[:1]) + kind[1:] + " #" + id
}

// TargetPath links the target's admin page ("" when it has none).
func (r AuditRow) TargetPath() string {
	kind, id, ok := strings.Cut(r.Target, ":")
	if _, err := strconv.ParseInt(id, 10, 64); !ok || err != nil {
		return ""
	}
	switch kind {
	case "goods", "slot", "order":
		return "/admin/" + map[string]string{"goods": "goods", "slot": "slots", "order": "orders"}[kind] + "/" + id
	case "coupon":
		return "/admin/coupons/" + id
	case "redpacket":
		return "/admin/redpackets/" + id
	}
	return ""
}
