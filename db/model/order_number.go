package model

import "fmt"

// OrderSeqSpan is how many orders one goods may number: an order ID is
// goods ID × OrderSeqSpan + the goods' order sequence.
const OrderSeqSpan = 1_000_000_000

// OrderNumber is an order's short number for people, "G12-0007" (goods 12,
// its 7th order); the API keeps the integer ID. static/app.js has the same
// rule (seckill.orderNumber).
func OrderNumber(id int64) string {
	if id <= 0 {
		return fmt.Sprint(id)
	}
	return fmt.Sprintf("G%d-%04d", id/OrderSeqSpan, id%OrderSeqSpan)
}
