package coupon

import (
	"strconv"

	"github.com/seckill/seckill/db/backend"
)

// Every Redis key of one template carries the tag {coupon:ID}, so each
// script touches one Redis Cluster slot.
func tag(id int64) string { return "{coupon:" + strconv.FormatInt(id, 10) + "}" }

// metaKey is the template's hash: start, end (unix ms), limit, days, total.
func metaKey(id int64) string { return tag(id) + ":meta" }

// stockKey is the template's remaining stock.
func stockKey(id int64) string { return tag(id) + ":stock" }

// usersKey is the hash of user → coupons grabbed, the per-user limit mark.
func usersKey(id int64) string { return tag(id) + ":users" }

// memoKey remembers the answer to one grab request of the user, so a
// retried command answers the same coupon instead of taking a second unit.
func memoKey(id, userID int64, requestID string) string {
	return tag(id) + ":req:" + strconv.FormatInt(userID, 10) + ":" + requestID
}

// unitsKey is the hash of unit → its grab record (record.go), one per unit
// given: what a restored store lacks is queued again from it (ResendGrabs).
// It lives as the template's other keys do (none expires), and grows by one
// short record per unit, so at most by the template's stock.
func unitsKey(id int64) string { return tag(id) + ":units" }

// grabQueue is the template's crash-safe flush queue of grab records.
func grabQueue(id int64) backend.FlushQueue {
	t := tag(id)
	return backend.FlushQueue{Pending: t + ":grabs", Processing: t + ":grabs:processing"}
}

// queuesKey lists the templates whose flush queues may hold records.
const queuesKey = "seckill:coupons:queues"
