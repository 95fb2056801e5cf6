// Package handlers translates HTTP to service calls and back: parse the
// request, call one Store method, answer JSON or render a view. No business
// rule lives here.
package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/redpacket"
	"github.com/seckill/seckill/db/switches"
	"github.com/seckill/seckill/views"
)

// SessionCookie is the name of the cookie that carries the signed token.
const SessionCookie = "seckill_session"

// Locals keys set by web's middleware.
const (
	claimsKey  = "seckill.claims"
	csrfKey    = "seckill.csrf"
	ipKey      = "seckill.ip"
	refusedKey = "seckill.refused"
	createdKey = "seckill.created"
	auditKey   = "seckill.audit"
	replayKey  = "seckill.replayed"
)

// AuditNote is what a handler tells the audit log of its change, in place
// of what web's audit middleware reads from the route and the request.
type AuditNote struct {
	Action, Target string
	Detail         any // encoded as JSON
}

// AuditNoteOf is the request's audit note, when its handler left one.
func AuditNoteOf(c *fiber.Ctx) (AuditNote, bool) {
	n, ok := c.Locals(auditKey).(AuditNote)
	return n, ok
}

// setAuditNote leaves the audit note of the request's change.
func setAuditNote(c *fiber.Ctx, n AuditNote) { c.Locals(auditKey, n) }

// Created is the id of the item the request created, when its handler said
// (a form whose answer redirects elsewhere than the new item); 0 otherwise.
func Created(c *fiber.Ctx) int64 {
	id, _ := c.Locals(createdKey).(int64)
	return id
}

// setCreated records the id of the item the request created, for the audit log.
func setCreated(c *fiber.Ctx, id int64) { c.Locals(createdKey, id) }

// Refused reports whether the request's form was refused and answered with
// a redirect carrying the reason: not a change, for the audit log.
func Refused(c *fiber.Ctx) bool {
	r, _ := c.Locals(refusedKey).(bool)
	return r
}

// Replayed reports whether the request was a keyed retry answered with
// its first answer: no change, for the audit log.
func Replayed(c *fiber.Ctx) bool {
	r, _ := c.Locals(replayKey).(bool)
	return r
}

// setReplayed records that the request was answered from its key's first answer.
func setReplayed(c *fiber.Ctx) { c.Locals(replayKey, true) }

// Site is the platform's own handlers (accounts, settings, the audit log,
// notifications) and what every area's handlers share: the layout of a page
// and the session cookie. Its pages that show several areas (the front page,
// the merchant's dashboard, the wallet) read them through Shelves, never
// through an area's service. Each area has its handler type below, holding
// the Site and its own service; the area builds it (cmd/seckill/app/area_*.go).
type Site struct {
	Accounts *account.Service
	Audit    *audit.Service
	Inbox    *inbox.Service
	Tokens   *account.Tokens
	TokenTTL time.Duration
	// MonitorPath is where Asynqmon is mounted, linked from the admin dashboard.
	MonitorPath string
	// Shelves are what the platform's pages read of the areas.
	Shelves Shelves
	// Switches are the steering switches of a running sale.
	Switches *switches.Service
	// Now is the process's clock (nil: the wall's).
	Now func() time.Time
	// Log is where handlers note what they cannot answer (nil: slog's default).
	Log *slog.Logger

	cardsOnce sync.Once
	cards     *homeCards // the front page's red packet and coupon cards (home_cards.go)
	docs      docs       // what every reader not signed in reads alike, rendered once (shared.go)
	swKey     atomic.Pointer[switchesKeyed]
}

// Goods are the goods area's shoppers' handlers: slots and goods on sale,
// the grab, the shopper's orders.
type Goods struct {
	*Site
	Goods GoodsShop
}

// GoodsShop is what the shoppers' goods handlers ask of the goods area
// (goods.Service is one).
type GoodsShop interface {
	// Catalog is what shoppers read of slots, goods and stock, from memory.
	Catalog() *goods.Catalog
	Decide(ctx context.Context, grabs []goods.Grab) []goods.Outcome
	Order(ctx context.Context, userID, orderID int64) (*model.Order, error)
	CancelOrder(ctx context.Context, userID, orderID int64) (*model.Order, error)
	MyOrders(ctx context.Context, userID int64) ([]model.Order, error)
	Reminders(ctx context.Context, userID, goodsID int64) ([]model.BookedReminder, error)
	Image(ctx context.Context, hash string) (*goods.Image, error)
}

// GoodsDesk are the goods area's merchants' handlers: their slots and
// goods, ending, hiding and pictures, totals and the orders' export.
type GoodsDesk struct {
	*Site
	Goods GoodsMerchant
}

// GoodsMerchant is what the merchants' goods handlers ask of the goods
// area (goods.Service is one). Each call is checked against its caller.
type GoodsMerchant interface {
	CheckSlot(in goods.SlotInput) error
	CreateSlot(ctx context.Context, by model.Claims, in goods.SlotInput) (*model.Slot, error)
	UpdateSlot(ctx context.Context, by model.Claims, id int64, in goods.SlotInput) (*model.Slot, error)
	SetSlotHidden(ctx context.Context, by model.Claims, id int64, hidden bool) (*model.Slot, error)
	EndSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error)
	DeleteRehearsal(ctx context.Context, by model.Claims, id int64) error
	MerchantSlots(ctx context.Context, by model.Claims) ([]model.Slot, error)
	OwnedSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error)
	SlotSales(ctx context.Context, by model.Claims, slotID int64) (*model.Slot, []model.GoodsSales, error)
	SlotSamples(ctx context.Context, by model.Claims, slotID int64) ([]model.Sample, error)

	Check(ctx context.Context, by model.Claims, id int64, in goods.Input) error
	Create(ctx context.Context, by model.Claims, in goods.Input) (*model.Goods, error)
	Update(ctx context.Context, by model.Claims, id int64, in goods.Input) (*model.Goods, error)
	SetGoodsHidden(ctx context.Context, by model.Claims, id int64, hidden bool) (*model.Goods, error)
	EndGoods(ctx context.Context, by model.Claims, id int64) (*model.Goods, error)
	SetImage(ctx context.Context, by model.Claims, id int64, data []byte) (*model.Goods, error)
	Owned(ctx context.Context, by model.Claims, id int64) (*model.Goods, error)
	Stats(ctx context.Context, by model.Claims, id int64) (*model.GoodsStats, error)
	Samples(ctx context.Context, by model.Claims, id int64) ([]model.Sample, error)
	Conflicts(ctx context.Context, by model.Claims, id int64) ([]model.OrderConflict, error)
	OrdersCSV(ctx context.Context, by model.Claims, goodsID int64) (func(row func(o *model.Order, username string) error) error, error)
}

// Fair are fair sales' handlers: the waiting room, raffles, the proof of work.
type Fair struct {
	*Site
	Fair  *fair.Service
	Goods FairGoods // the goods the room or raffle sells, for its pages
}

// FairGoods is what the fair sales' pages read of the goods area.
type FairGoods interface {
	ShopperGoods(ctx context.Context, by model.Claims, id int64) (*model.Goods, error)
	OrderOf(ctx context.Context, orderID int64) (*model.Order, error)
	MyOrders(ctx context.Context, userID int64) ([]model.Order, error)
}

// Coupons are the coupons area's handlers.
type Coupons struct {
	*Site
	Coupons *coupon.Service
}

// RedPackets are the red packets area's handlers.
type RedPackets struct {
	*Site
	RedPackets *redpacket.Service
}

// Checkout are the checkout area's handlers: paying, refunds, the orders desk.
type Checkout struct {
	*Site
	Checkout *checkout.Service
}

// SetClaims records who is calling; web's auth middleware calls it.
func SetClaims(c *fiber.Ctx, cl model.Claims) { c.Locals(claimsKey, cl) }

// SetCSRF records how to get the CSRF token that forms on this page must
// carry; it is asked for only by a page with a form (an anonymous reader's
// token needs a cookie, which a page without a form must not set).
func SetCSRF(c *fiber.Ctx, token func() string) { c.Locals(csrfKey, token) }

// SetClientIP records the caller's address as web resolved it (TRUSTED_PROXIES).
func SetClientIP(c *fiber.Ctx, ip netip.Addr) { c.Locals(ipKey, ip) }

// ClientIP returns the caller's address: the TCP peer, or what a trusted proxy forwarded.
func ClientIP(c *fiber.Ctx) netip.Addr {
	ip, _ := c.Locals(ipKey).(netip.Addr)
	return ip
}

// ClientIPText is ClientIP as text, empty when unknown (for the audit log).
func ClientIPText(c *fiber.Ctx) string {
	if ip := ClientIP(c); ip.IsValid() {
		return ip.String()
	}
	return ""
}

// ClaimsOf returns the caller's claims, if the request carried a valid token.
func ClaimsOf(c *fiber.Ctx) (model.Claims, bool) {
	cl, ok := c.Locals(claimsKey).(model.Claims)
	return cl, ok
}

// caller returns the logged-in caller or an unauthorized error.
func caller(c *fiber.Ctx) (model.Claims, error) {
	if cl, ok := ClaimsOf(c); ok {
		return cl, nil
	}
	return model.Claims{}, db.ErrUnauthorized
}

// paramID parses a positive integer route parameter.
func paramID(c *fiber.Ctx, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, db.Errorf(db.EINVALID, "%s must be a positive integer", name)
	}
	return id, nil
}

// bind decodes a JSON body into v; anything that is not JSON of the right
// shape is invalid, naming the field at fault where one is. An admin write
// (a route under /api/admin) also refuses a field v does not have: a
// misspelt switch or setting taken silently would look like a change made.
// A shopper's write still ignores one, for clients older or newer than
// this server.
func bind(c *fiber.Ctx, v any) error {
	body := c.Body()
	if !json.Valid(body) {
		return db.Errorf(db.EINVALID, "body is not valid JSON")
	}
	if name := nullField(body); name != "" {
		return db.FieldErrorf(clip(name, 64), "must not be null: leave the field out to leave it unchanged")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strings.HasPrefix(c.Route().Path, "/api/admin/") {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return db.Errorf(db.EINVALID, "body must be a JSON object")
		}
		return db.FieldErrorf(te.Field, "has the wrong type or is out of range")
	}
	if name, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		return db.FieldErrorf(clip(strings.TrimSuffix(name, `"`), 64), "is not a field of this request")
	}
	// A value its field's own decoder refused (a time that is not one):
	// encoding/json does not say whose it was, so each field is tried alone.
	if name, t := refusedField(body, v); name != "" {
		if t == reflect.TypeFor[time.Time]() {
			return db.FieldErrorf(name, "must be an RFC 3339 time like 2030-01-02T10:00:00Z")
		}
		return db.FieldErrorf(name, "has a value this field cannot take")
	}
	return db.Errorf(db.EINVALID, "body does not have the shape this request takes")
}

// nullField is the first field (by name) of the JSON object body whose
// value is null, or "": a field is sent with a value or left out, and null
// is no value any field takes (it would read as left out).
func nullField(body []byte) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	var names []string
	for name, raw := range obj {
		if string(bytes.TrimSpace(raw)) == "null" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return names[0]
}

// refusedField is the first field (by name) of the JSON object body whose
// value v's field of that name will not decode, and that field's type
// (pointers taken off); "" when every field decodes alone.
func refusedField(body []byte, v any) (string, reflect.Type) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return "", nil
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		t, ok := jsonField(reflect.TypeOf(v), name)
		if !ok {
			continue
		}
		if json.Unmarshal(obj[name], reflect.New(t).Interface()) != nil {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return name, t
		}
	}
	return "", nil
}

// jsonField is the type of the field of struct type t (or a pointer to
// one) that encoding/json fills from the object key name: the tag's name,
// else the Go name, matched without regard to case, embedded structs
// searched as encoding/json does.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case f.Anonymous && tag == "":
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
			continue
		case !f.IsExported():
			continue
		case tag == "":
			tag = f.Name
		}
		if strings.EqualFold(tag, name) {
			return f.Type, true
		}
	}
	return nil, false
}

// clip is s cut to at most n runes, for echoing a client's text in a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// HeaderIdempotencyKey names the header that makes a grab, pay, cancel or refund safe to retry.
const HeaderIdempotencyKey = "Idempotency-Key"

// opContext is the request's context, carrying its Idempotency-Key when it
// has one (1–64 printable characters; anything else is invalid).
func opContext(c *fiber.Ctx) (context.Context, error) {
	key := c.Get(HeaderIdempotencyKey)
	if key == "" {
		return c.UserContext(), nil
	}
	if !db.ValidIdempotencyKey(key) {
		return nil, db.Errorf(db.EINVALID, "Idempotency-Key must be %d–%d printable characters", model.RequestKey.Min, model.RequestKey.Max)
	}
	return db.WithIdempotencyKey(c.UserContext(), key), nil
}

// render writes a templ component as the HTML response.
func render(c *fiber.Ctx, status int, comp templ.Component) error {
	c.Status(status).Type("html", "utf-8")
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

// page fills the layout data every HTML page needs.
func (h *Site) page(c *fiber.Ctx, title string) views.Page {
	sw := h.Switches.Current()
	p := views.Page{Title: title, MonitorPath: h.MonitorPath, Switches: &sw, Path: c.Path()}
	if cl, ok := ClaimsOf(c); ok {
		p.User = &views.PageUser{ID: cl.UserID, Username: cl.Username, Role: cl.Role}
		p.CSRF = csrfToken(c) // the session's: no cookie to set
	}
	if f := c.Cookies(flashCookie); f != "" {
		raw, _ := url.QueryUnescape(f)
		p.Flash, p.FlashKind, p.FlashPlace = readFlash(raw)
		c.Cookie(&fiber.Cookie{Name: flashCookie, Value: "", Path: "/", Expires: time.Unix(1, 0), HTTPOnly: true})
	}
	return p
}

func csrfToken(c *fiber.Ctx) string {
	if f, ok := c.Locals(csrfKey).(func() string); ok {
		return f()
	}
	return ""
}

// formPage is page for a page with a form an anonymous reader may post
// (sign-in, sign-up): it carries the CSRF token, whose cookie it sets.
func (h *Site) formPage(c *fiber.Ctx, title string) views.Page {
	p := h.page(c, title)
	p.CSRF = csrfToken(c)
	return p
}

const flashCookie = "seckill_flash"

// redirectWithFlash sends the browser to path with a one-time success
// message shown at the top of the page there.
func redirectWithFlash(c *fiber.Ctx, path, msg string) error {
	return redirectWithNote(c, path, views.FlashSuccess, "", msg)
}

// redirectWithNote sends the browser to path with a one-time message of a
// kind (views.FlashSuccess or views.FlashError) shown at a place on the page
// there: beside the form that place names ("" for the top of the page), so
// an answer is read where the question was asked.
func redirectWithNote(c *fiber.Ctx, path, kind, place, msg string) error {
	if kind == views.FlashError {
		c.Locals(refusedKey, true)
	}
	c.Cookie(&fiber.Cookie{Name: flashCookie, Value: url.QueryEscape(kind + "|" + place + "|" + msg), Path: "/", HTTPOnly: true, SameSite: "Lax", MaxAge: 60})
	return c.Redirect(path, fiber.StatusSeeOther)
}

// readFlash splits a flash cookie into message, kind and place; a cookie
// without them (set by an older process) is a success at the top.
func readFlash(raw string) (msg, kind, place string) {
	parts := strings.SplitN(raw, "|", 3)
	if len(parts) == 3 && (parts[0] == views.FlashSuccess || parts[0] == views.FlashError) {
		return parts[2], parts[0], parts[1]
	}
	return raw, views.FlashSuccess, ""
}

// setSession stores the token in the HttpOnly session cookie.
func (h *Site) setSession(c *fiber.Ctx, token string) {
	c.Cookie(&fiber.Cookie{
		Name: SessionCookie, Value: token, Path: "/", HTTPOnly: true, SameSite: "Lax",
		Secure: c.Protocol() == "https", MaxAge: int(h.TokenTTL.Seconds()),
	})
}

// callerAndID is the signed-in caller and the route's :id.
func callerAndID(c *fiber.Ctx) (model.Claims, int64, error) {
	cl, err := caller(c)
	if err != nil {
		return model.Claims{}, 0, err
	}
	id, err := paramID(c, "id")
	return cl, id, err
}

// answerByID is a route that makes one service call for the signed-in
// caller on the route's :id and answers {key: result}.
func answerByID[T any](c *fiber.Ctx, key string, call func(context.Context, model.Claims, int64) (T, error)) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	v, err := call(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{key: v})
}

// joinByID is a route that puts the signed-in caller into something of the
// route's :id (a waiting room, a raffle) past the proof of work X-Pow and
// answers {key: result}: 201 when new, 200 with what the caller held.
func joinByID[T any](c *fiber.Ctx, key string, join func(ctx context.Context, userID, id int64, pow string) (T, bool, error)) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx, err := opContext(c) // a keyed retry may bring the proof its undecided first try spent
	if err != nil {
		return err
	}
	v, created, err := join(ctx, cl.UserID, id, c.Get("X-Pow"))
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(fiber.Map{key: v})
}
