package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
)

// bind names the field at fault: a wrong type, a time that is not one, and
// on an admin route a field the body does not have; a shopper's route
// ignores an unknown field; what is not one JSON object names none.
func TestBindNamesTheField(t *testing.T) {
	type inner struct {
		Note string `json:"note"`
	}
	type body struct {
		inner
		Count   *int       `json:"count"`
		At      *time.Time `json:"at"`
		When    time.Time  `json:"when"`
		Skipped string     `json:"-"`
		Title   string
	}
	var got error
	app := fiber.New()
	handle := func(c *fiber.Ctx) error {
		var b body
		got = bind(c, &b)
		return nil
	}
	app.Post("/api/admin/things", handle)
	app.Post("/api/things", handle)
	for _, tc := range []struct {
		path, body string
		field      string // "" for no field named
		ok         bool
	}{
		{"/api/admin/things", `{"count": 2, "at": "2030-01-02T10:00:00Z", "note": "n", "title": "t"}`, "", true},
		{"/api/admin/things", `{"count": "2"}`, "count", false},
		{"/api/admin/things", `{"count": 1e40}`, "count", false},
		{"/api/admin/things", `{"at": "2030-13-01T00:00:00Z"}`, "at", false},
		{"/api/admin/things", `{"count": 1, "when": 1893456000}`, "when", false},
		{"/api/admin/things", `{"colour": "red"}`, "colour", false},
		{"/api/admin/things", `{"Skipped": "x"}`, "Skipped", false},
		{"/api/admin/things", `{"TITLE": "t", "Note": "n"}`, "", true}, // encoding/json's names match in any case
		{"/api/things", `{"colour": "red", "count": 1}`, "", true},
		{"/api/things", `{"at": "tomorrow"}`, "at", false},
		{"/api/admin/things", `{"count": 1} {}`, "", false},
		{"/api/admin/things", `[1]`, "", false},
		{"/api/admin/things", ``, "", false},
	} {
		got = nil
		if _, err := app.Test(httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))); err != nil {
			t.Fatal(err)
		}
		fields := db.FieldsOf(got)
		switch {
		case tc.ok && got != nil:
			t.Errorf("%s %s: %v, want it taken", tc.path, tc.body, got)
		case !tc.ok && db.ErrorCode(got) != db.EINVALID:
			t.Errorf("%s %s: %v, want invalid", tc.path, tc.body, got)
		case !tc.ok && tc.field != "" && (len(fields) != 1 || fields[tc.field] == ""):
			t.Errorf("%s %s: fields %v, want %s named", tc.path, tc.body, fields, tc.field)
		case !tc.ok && tc.field == "" && len(fields) != 0:
			t.Errorf("%s %s: fields %v, want none named", tc.path, tc.body, fields)
		}
	}
}
