package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// Routes become short verbs on targets; secrets never reach the detail.
func TestAuditActionAndFields(t *testing.T) {
	tests := []struct {
		method, route, path, ctype, body string
		answer                           func(c *fiber.Ctx) error
		action, target, detail           string
	}{
		{"POST", "/api/admin/goods", "/api/admin/goods", "application/json", `{"title":"Tea","slot_id":3}`,
			func(c *fiber.Ctx) error { return c.Status(201).JSON(fiber.Map{"goods": fiber.Map{"id": 42}}) },
			"goods.create", "goods:42", `{"slot_id":3,"title":"Tea"}`},
		{"PUT", "/api/admin/coupons/:id", "/api/admin/coupons/7", "application/json", `{"title":"Ten off"}`,
			func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"coupon": fiber.Map{"id": 7}}) },
			"coupon.update", "coupon:7", `{"title":"Ten off"}`},
		{"POST", "/api/admin/users", "/api/admin/users", "application/json", `{"username":"m1","password":"secret123","role":"merchant"}`,
			func(c *fiber.Ctx) error { return c.Status(201).JSON(fiber.Map{"user": fiber.Map{"id": 5}}) },
			"user.create", "user:5", `{"role":"merchant","username":"m1"}`},
		{"POST", "/admin/slots", "/admin/slots", "application/x-www-form-urlencoded", "_csrf=x&title=Noon&tz_offset=-60",
			func(c *fiber.Ctx) error { return c.Redirect("/admin/slots/9", 303) },
			"slot.create", "slot:9", `{"title":"Noon","tz_offset":"-60"}`},
		{"POST", "/admin/slots/:id", "/admin/slots/9", "application/x-www-form-urlencoded", "_csrf=x&title=Later",
			func(c *fiber.Ctx) error { return c.Redirect("/admin/slots/9", 303) },
			"slot.update", "slot:9", `{"title":"Later"}`},
		{"POST", "/admin/slots/:id/goods", "/admin/slots/9/goods", "application/x-www-form-urlencoded", "_csrf=x&title=Tea",
			func(c *fiber.Ctx) error { return c.Redirect("/admin/slots/9", 303) },
			"goods.create", "goods", `{"slot_id":"9","title":"Tea"}`},
		{"POST", "/api/admin/goods/:id/end", "/api/admin/goods/42/end", "application/json", "",
			func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"goods": fiber.Map{"id": 42}}) },
			"goods.end", "goods:42", `{}`},
		{"POST", "/admin/slots/:id/hidden", "/admin/slots/9/hidden", "application/x-www-form-urlencoded", "_csrf=x&hidden=1",
			func(c *fiber.Ctx) error { return c.Redirect("/admin/slots/9", 303) },
			"slot.hidden", "slot:9", `{"hidden":"1"}`},
		{"POST", "/admin/redpackets", "/admin/redpackets", "application/x-www-form-urlencoded", "_csrf=x&title=Lucky&api_token=t",
			func(c *fiber.Ctx) error { return c.Redirect("/admin/redpackets/4", 303) },
			"redpacket.create", "redpacket:4", `{"title":"Lucky"}`},
	}
	for _, tt := range tests {
		app := fiber.New()
		var action, target, detail string
		app.Add(tt.method, tt.route, func(c *fiber.Ctx) error {
			err := tt.answer(c)
			fields := requestFields(c)
			action, target = auditAction(c, fields)
			b, _ := json.Marshal(fields)
			detail = string(b)
			return err
		})
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.ctype)
		if _, err := app.Test(req); err != nil {
			t.Fatal(err)
		}
		if got, want := action+" "+target+" "+detail, tt.action+" "+tt.target+" "+tt.detail; got != want {
			t.Errorf("%s %s: (-want +got)\n- %s\n+ %s", tt.method, tt.path, want, got)
		}
	}
}
