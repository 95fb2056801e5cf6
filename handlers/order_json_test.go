package handlers

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db/model"
)

// sendOrder answers what c.JSON(fiber.Map{"order": o}) answers: the same
// status, content type and bytes.
func TestSendOrderMatchesJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 4, 5, 6_000_000, time.UTC)
	orders := []*model.Order{
		{ID: 3_000_000_009, GoodsID: 3, UserID: 42, AmountCents: 4999, Status: model.OrderUnpaid, Unit: 7,
			CreatedAt: at, ExpiresAt: at.Add(30 * time.Minute), UpdatedAt: at},
		{ID: 1, Status: model.OrderFailed, GoodsTitle: `<Tea> & "cups"`, Failure: model.FailureSoldTwice, CreatedAt: at},
	}
	app := fiber.New()
	for i, o := range orders {
		app.Get("/fast/"+string(rune('0'+i)), func(c *fiber.Ctx) error { return sendOrder(c, fiber.StatusCreated, o) })
		app.Get("/json/"+string(rune('0'+i)), func(c *fiber.Ctx) error { return c.Status(fiber.StatusCreated).JSON(fiber.Map{"order": o}) })
	}
	get := func(path string) (int, string, string) {
		res, err := app.Test(httptest.NewRequest("GET", path, nil))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(body)
	}
	for i := range orders {
		fs, fc, fb := get("/fast/" + string(rune('0'+i)))
		js, jc, jb := get("/json/" + string(rune('0'+i)))
		if fs != js || fc != jc || fb != jb {
			t.Fatalf("order %d:\n sendOrder %d %s %s\n c.JSON    %d %s %s", i, fs, fc, fb, js, jc, jb)
		}
	}
}
