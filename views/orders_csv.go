package views

import (
	"context"
	"time"
)

// The orders exports (a goods' orders.csv, the desk's orders.csv) are
// written for the one who reads them: a header in their language, statuses
// in words, times in their zone. format=machine keeps the columns'
// snake_case names, the raw statuses and RFC 3339 times (handlers/exports.go).

// csvHeaders are the reader's names of the exports' columns.
var csvHeaders = map[string]string{
	"number":        "Order number",
	"order_id":      "Order ID",
	"goods_id":      "Goods ID",
	"goods_title":   "Goods",
	"username":      "Shopper",
	"user_id":       "User ID",
	"status":        "Status",
	"amount":        "Amount (¥)",
	"discount":      "Discount (¥)",
	"paid":          "Paid (¥)",
	"created_at":    "Placed at",
	"paid_at":       "Paid at",
	"refunded_at":   "Refunded at",
	"refunded_by":   "Refunded by",
	"refund_reason": "Refund reason",
}

// csvTimeColumns are the columns that hold times: their header names the zone.
var csvTimeColumns = map[string]bool{"created_at": true, "paid_at": true, "refunded_at": true}

// CSVHeader is the header row of an export for its reader: each column's
// name in their language, a time column's with the zone its times are in.
func CSVHeader(ctx context.Context, columns []string, zone *time.Location) []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		name, ok := csvHeaders[c]
		if !ok {
			out[i] = c
			continue
		}
		out[i] = T(ctx, name)
		if csvTimeColumns[c] {
			out[i] += " (" + zoneName(zone) + ")"
		}
	}
	return out
}

// CSVStatus is an order's status in the reader's words ("Paid", "已支付").
func CSVStatus(ctx context.Context, status string) string { return T(ctx, stateLabel(status)) }

// CSVTime is an instant in the reader's zone, as a spreadsheet reads a date
// and time ("2026-12-06 08:56:05"); "" for none.
func CSVTime(t *time.Time, zone *time.Location) string {
	if t == nil {
		return ""
	}
	return t.In(zone).Format(time.DateTime)
}

// zoneName names a zone as its reader knows it: its IANA name, or its
// offset from UTC when it has none ("UTC+08:00").
func zoneName(zone *time.Location) string {
	if n := zone.String(); n != "" && n != "Local" {
		return n
	}
	_, off := time.Now().In(zone).Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return "UTC" + sign + time.Unix(int64(off), 0).UTC().Format("15:04")
}
