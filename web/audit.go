package web

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/handlers"
)

// audit records every change made through the admin API and the merchant
// pages: a write method that ended 2xx or 3xx becomes one audit entry, with
// the caller as actor, a verb derived from the route ("goods.update"), the
// item as target ("goods:42") and the submitted fields, secrets removed, as
// detail. A refused form, or a keyed retry answered as its first, changed
// nothing and is not recorded. It runs after the change, so a failed append
// is logged and never turns a done change into an error. Sits behind
// requireRole, or requireUser on a shopper's route that is audited too (a
// refund: order.refund on order:ID): claims exist.
func (s *Server) audit(c *fiber.Ctx) error {
	err := c.Next()
	switch c.Method() {
	case fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete:
	default:
		return err
	}
	if st := c.Response().StatusCode(); err != nil || st < 200 || st >= 400 || handlers.Refused(c) || handlers.Replayed(c) {
		return err
	}
	cl, _ := handlers.ClaimsOf(c)
	e := audit.Entry{ActorID: cl.UserID, Actor: cl.Username, IP: handlers.ClientIPText(c)}
	if n, ok := handlers.AuditNoteOf(c); ok { // the handler says what changed
		e.Action, e.Target = n.Action, n.Target
		detail, _ := json.Marshal(n.Detail)
		e.Detail = string(detail)
	} else {
		fields := requestFields(c)
		e.Action, e.Target = auditAction(c, fields)
		if len(fields) > 0 {
			detail, _ := json.Marshal(fields)
			e.Detail = string(detail)
		}
	}
	if aerr := s.audits.Append(c.UserContext(), e); aerr != nil {
		s.log.Error("audit", "action", e.Action, "target", e.Target, "err", aerr)
	}
	return err
}

// auditAction derives the entry's action and target from the matched route:
// "/api/admin/goods/:id" with PUT is goods.update on goods:ID; a POST to a
// collection is a create whose target takes the new item's id from the JSON
// answer ({"goods":{"id":42}}) or the redirect (/admin/goods/42). Route
// parameters that are not the target go into fields as "<kind>_id".
func auditAction(c *fiber.Ctx, fields map[string]any) (action, target string) {
	path := c.Route().Path
	for _, p := range []string{"/api/admin", "/admin"} {
		if strings.HasPrefix(path, p+"/") {
			path = strings.TrimPrefix(path, p)
			break
		}
	}
	segs := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
	if len(segs) == 0 {
		return strings.ToLower(c.Method()) + " " + c.Route().Path, ""
	}
	// An action on one item (POST /goods/:id/end) is named by it: goods.end on goods:ID.
	if n := len(segs); n >= 3 && itemActions[segs[n-1]] && strings.HasPrefix(segs[n-2], ":") {
		kind := singular(segs[n-3])
		return kind + "." + segs[n-1], kind + ":" + c.Params(segs[n-2][1:])
	}
	last := segs[len(segs)-1]
	onItem := strings.HasPrefix(last, ":")
	kindSeg := last
	if onItem && len(segs) > 1 {
		kindSeg = segs[len(segs)-2]
	}
	kind := singular(kindSeg)
	for i, seg := range segs {
		if !strings.HasPrefix(seg, ":") || (onItem && i == len(segs)-1) || i == 0 {
			continue
		}
		key := singular(segs[i-1]) + "_id"
		if _, ok := fields[key]; !ok {
			fields[key] = c.Params(seg[1:])
		}
	}
	verb := "create"
	switch {
	case c.Method() == fiber.MethodDelete:
		verb = "delete"
	case onItem || c.Method() == fiber.MethodPut || c.Method() == fiber.MethodPatch:
		verb = "update"
	}
	switch {
	case onItem:
		target = kind + ":" + c.Params(last[1:])
	case verb == "create":
		target = kind
		if id := handlers.Created(c); id > 0 {
			target = kind + ":" + strconv.FormatInt(id, 10)
		} else if id := createdID(c, kindSeg); id > 0 {
			target = kind + ":" + strconv.FormatInt(id, 10)
		}
	default:
		target = kind
	}
	return kind + "." + verb, target
}

// createdID finds the id of the item a create made: the "id" of the JSON
// answer's single top-level object, or the last segment of a redirect to
// /admin/<collection>/<id>; 0 when neither says.
func createdID(c *fiber.Ctx, collection string) int64 {
	res := c.Response()
	if bytes.HasPrefix(res.Header.ContentType(), []byte(fiber.MIMEApplicationJSON)) {
		var answer map[string]json.RawMessage
		if json.Unmarshal(res.Body(), &answer) == nil && len(answer) == 1 {
			for _, raw := range answer {
				var item struct {
					ID int64 `json:"id"`
				}
				if json.Unmarshal(raw, &item) == nil {
					return item.ID
				}
			}
		}
		return 0
	}
	loc := string(res.Header.Peek(fiber.HeaderLocation))
	if rest, ok := strings.CutPrefix(loc, "/admin/"+collection+"/"); ok {
		if id, err := strconv.ParseInt(rest, 10, 64); err == nil {
			return id
		}
	}
	return 0
}

// requestFields returns the JSON object or form fields of the request,
// without any whose name says it holds a secret.
func requestFields(c *fiber.Ctx) map[string]any {
	fields := map[string]any{}
	ct := string(c.Request().Header.ContentType())
	switch {
	case strings.HasPrefix(ct, fiber.MIMEApplicationJSON):
		var obj map[string]any
		if json.Unmarshal(c.Body(), &obj) == nil {
			fields = obj
		}
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		if form, err := c.MultipartForm(); err == nil {
			for k, vs := range form.Value {
				fields[k] = formValue(vs)
			}
		}
	default:
		values := map[string][]string{}
		for k, v := range c.Request().PostArgs().All() {
			values[string(k)] = append(values[string(k)], string(v))
		}
		for k, vs := range values {
			fields[k] = formValue(vs)
		}
	}
	for k := range fields {
		if secretField(k) {
			delete(fields, k)
		}
	}
	return fields
}

func formValue(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// secretField reports whether a field's name says it holds a secret that must not be logged.
func secretField(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "secret", "token", "csrf"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// singular names one item of a route's collection: "slots" → "slot", "goods" stays.
// itemActions are the last route segments that name an action on the item before them.
var itemActions = map[string]bool{"end": true, "hidden": true, "image": true, "refund": true}

func singular(collection string) string {
	if collection == "goods" {
		return collection
	}
	return strings.TrimSuffix(collection, "s")
}
