package handlers

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"time"
	_ "time/tzdata" // the tz query's zones, on a host without a zone database

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
	"github.com/seckill/seckill/views/i18n"
)

// The CSV exports: orders of a goods, grabs of a red packet, claims of a
// coupon. Each is UTF-8 with a byte order mark: spreadsheets (Excel above
// all) read a CSV without one in the machine's legacy code page, which
// garbles usernames and titles outside ASCII; with it they open the file
// right, and CSV readers that know UTF-8 skip it. Text is quoted by
// encoding/csv, amounts are currency units with two decimals ("9.90"),
// times RFC 3339 with the offset of the shop's time zone.

// ordersCSV is how an orders export is written: for its reader by default
// (a header in their language, statuses in words, times in their zone: the
// tz query, an IANA name the page's script adds to the link, else the
// shop's), or for a program with format=machine (the columns' snake_case
// names, raw statuses, RFC 3339 times with the shop zone's offset).
type ordersCSV struct {
	ctx     context.Context // the reader's language
	machine bool
	zone    *time.Location
}

// ordersCSVOf reads an orders export's format and tz queries.
func ordersCSVOf(c *fiber.Ctx) (ordersCSV, error) {
	// The language found now, while the request lasts: the rows are written after it.
	lang := i18n.Of(c.UserContext())
	f := ordersCSV{ctx: i18n.With(context.Background(), lang), zone: shopZone()}
	switch c.Query("format") {
	case "":
	case "machine":
		f.machine = true
	default:
		return f, db.FieldErrorf("format", "must be machine, or left out for the reader's form")
	}
	if tz := c.Query("tz"); tz != "" {
		z, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			return f, db.FieldErrorf("tz", "must be a time zone name such as Asia/Shanghai")
		}
		f.zone = z
	}
	return f, nil
}

// header is the export's header row.
func (f ordersCSV) header(columns []string) []string {
	if f.machine {
		return columns
	}
	return views.CSVHeader(f.ctx, columns, f.zone)
}

// status is an order's status as the export writes it.
func (f ordersCSV) status(s string) string {
	if f.machine {
		return s
	}
	return views.CSVStatus(f.ctx, s)
}

// time is an instant as the export writes it ("" for none).
func (f ordersCSV) time(t *time.Time) string {
	switch {
	case t == nil:
		return ""
	case f.machine:
		return csvTime(*t, shopZone())
	}
	return views.CSVTime(t, f.zone)
}

// csvBOM is the UTF-8 byte order mark that starts every export.
const csvBOM = "\uFEFF"

// csvTime writes an instant as the exports do: RFC 3339 with the offset of zone.
func csvTime(t time.Time, zone *time.Location) string { return t.In(zone).Format(time.RFC3339) }

// streamCSV answers a CSV download named filename: the header row, then the
// rows rows writes, each sent as it is written.
func streamCSV(c *fiber.Ctx, filename string, header []string, rows func(write func([]string) error) error) error {
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s"`, filename))
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		w.WriteString(csvBOM)
		cw := csv.NewWriter(w)
		cw.Write(header)
		_ = rows(func(rec []string) error {
			cw.Write(rec)
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			return w.Flush() // rows leave as they are read
		})
		cw.Flush()
	})
	return nil
}

// RedPacketGrabsColumns are the columns of a red packet's grabs export.
var RedPacketGrabsColumns = []string{"redpacket_id", "username", "user_id", "amount", "grabbed_at"}

// RedPacketGrabsCSV exports who got how much of a red packet, in grab order:
// GET /api/admin/redpackets/{id}/grabs.csv.
func (h *RedPackets) RedPacketGrabsCSV(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	v, err := h.RedPackets.AdminPage(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	zone := shopZone()
	return streamCSV(c, fmt.Sprintf("redpacket-%d-grabs.csv", id), RedPacketGrabsColumns, func(write func([]string) error) error {
		for _, g := range v.Grabs.Grabs {
			if err := write([]string{strconv.FormatInt(id, 10), g.Username, strconv.FormatInt(g.UserID, 10),
				model.Yuan(g.AmountCents), csvTime(g.GrabbedAt, zone)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// CouponClaimsColumns are the columns of a coupon's claims export.
var CouponClaimsColumns = []string{"coupon_id", "user_coupon_id", "username", "user_id", "status", "grabbed_at", "valid_until", "order_number"}

// CouponClaimsCSV exports who grabbed a coupon and what became of it, newest first:
// GET /api/admin/coupons/{id}/claims.csv.
func (h *Coupons) CouponClaimsCSV(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	_, claims, err := h.Coupons.Claims(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	zone := shopZone()
	return streamCSV(c, fmt.Sprintf("coupon-%d-claims.csv", id), CouponClaimsColumns, func(write func([]string) error) error {
		for _, u := range claims {
			number := ""
			if u.OrderID > 0 {
				number = model.OrderNumber(u.OrderID)
			}
			if err := write([]string{strconv.FormatInt(id, 10), strconv.FormatInt(u.UserCouponID, 10), u.Username, strconv.FormatInt(u.UserID, 10),
				u.Status, csvTime(u.GrabbedAt, zone), csvTime(u.ValidUntil, zone), number}); err != nil {
				return err
			}
		}
		return nil
	})
}

// RedPacketGrabsPage lists who got a red packet, searchable by username:
// GET /admin/redpackets/{id}/grabs?q=.
func (h *RedPackets) RedPacketGrabsPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	v, err := h.RedPackets.AdminPage(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	q := c.Query("q")
	cv := views.ClaimsView{Kind: "redpacket", ID: id, Title: v.Packet.Title, Q: q,
		BackPath: "/admin/redpackets/" + strconv.FormatInt(id, 10), CSVPath: fmt.Sprintf("/api/admin/redpackets/%d/grabs.csv", id)}
	for _, g := range v.Grabs.Grabs {
		cv.Total++
		if model.UsernameMatches(g.Username, q) {
			cv.Rows = append(cv.Rows, views.ClaimRow{Username: g.Username, UserID: g.UserID, At: g.GrabbedAt, AmountCents: g.AmountCents})
		}
	}
	return render(c, fiber.StatusOK, views.ClaimsPage(h.page(c, "Grabs · "+v.Packet.Title), cv))
}

// CouponClaimsPage lists who grabbed a coupon, searchable by username:
// GET /admin/coupons/{id}/claims?q=.
func (h *Coupons) CouponClaimsPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	q := c.Query("q")
	cp, all, err := h.Coupons.Claims(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	cv := views.ClaimsView{Kind: "coupon", ID: id, Title: cp.Title, Q: q, Total: len(all),
		BackPath: "/admin/coupons/" + strconv.FormatInt(id, 10), CSVPath: fmt.Sprintf("/api/admin/coupons/%d/claims.csv", id)}
	for _, u := range all {
		if model.UsernameMatches(u.Username, q) {
			cv.Rows = append(cv.Rows, views.ClaimRow{Username: u.Username, UserID: u.UserID, At: u.GrabbedAt, Status: u.Status, OrderID: u.OrderID})
		}
	}
	return render(c, fiber.StatusOK, views.ClaimsPage(h.page(c, "Claims · "+cp.Title), cv))
}
