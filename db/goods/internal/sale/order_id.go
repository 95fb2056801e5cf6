package sale

import "github.com/seckill/seckill/db/model"

// Order IDs are assigned inside the grab script from a per-goods sequence,
// with no SQL: ID = goods ID * OrderSeqSpan + sequence. The goods (and so the
// Redis keys holding the order) can be read back from the ID alone.
const OrderSeqSpan = model.OrderSeqSpan

// MaxID is the largest goods ID whose order IDs stay below 2^53, the
// largest integer a JSON client is guaranteed to read exactly.
const MaxID = (1<<53)/OrderSeqSpan - 1

// OrderID combines a goods ID and a per-goods sequence number.
func OrderID(goodsID, seq int64) int64 { return goodsID*OrderSeqSpan + seq }

// SplitOrderID returns the goods ID and sequence of an order ID, and false
// for numbers that cannot be an order ID.
func SplitOrderID(id int64) (goodsID, seq int64, ok bool) {
	goodsID, seq = id/OrderSeqSpan, id%OrderSeqSpan
	if id <= 0 || goodsID < 1 || goodsID > MaxID || seq < 1 {
		return 0, 0, false
	}
	return goodsID, seq, true
}
