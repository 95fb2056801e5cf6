package handlers

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// AuditLog answers a page of the audit log, newest first: GET /api/admin/audit?before=&limit=.
func (h *Site) AuditLog(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	entries, err := h.Audit.Entries(c.UserContext(), cl, before, int(limit))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"entries": entries})
}

// AuditPage shows the audit log with a link to older entries: GET /admin/audit?before=.
func (h *Site) AuditPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	// One more than a page tells whether there is an older one.
	entries, err := h.Audit.Entries(c.UserContext(), cl, before, audit.DefaultLimit+1)
	if err != nil {
		return err
	}
	var v views.AuditView
	if len(entries) > audit.DefaultLimit {
		entries = entries[:audit.DefaultLimit]
		v.OlderBefore = entries[len(entries)-1].ID
	}
	for _, e := range entries {
		v.Entries = append(v.Entries, views.AuditRow{ID: e.ID, At: e.At, ActorID: e.ActorID, Actor: e.Actor,
			Action: e.Action, Target: e.Target, Detail: e.Detail, IP: e.IP})
	}
	return render(c, fiber.StatusOK, views.AuditPage(h.page(c, "Audit log"), v))
}

// auditSignIn records a sign-in or sign-up attempt (audit.ActionLogin or
// audit.ActionRegister) and its outcome err; a failed append is logged and never
// changes the answer.
func (h *Site) auditSignIn(c *fiber.Ctx, action, username string, u *model.User, err error) {
	if aerr := h.Audit.SignIn(c.UserContext(), action, username, u, ClientIPText(c), err); aerr != nil {
		h.Audit.Log.Error("audit sign-in", "action", action, "err", aerr)
	}
}

// queryInt parses an optional integer query parameter; left out is 0.
func queryInt(c *fiber.Ctx, name string) (int64, error) {
	s := c.Query(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, db.Errorf(db.EINVALID, "%s must be an integer", name)
	}
	return n, nil
}
