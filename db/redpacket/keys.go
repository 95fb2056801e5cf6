package redpacket

import (
	"fmt"

	"github.com/seckill/seckill/db/backend"
)

// Redis keys of one packet share its hash tag, so every script touches one slot.
func tag(id int64) string { return fmt.Sprintf("{redpacket:%d}", id) }

// metaKey is the packet's hash: expires_ms, remaining_cents, count, and
// expired once the expiry froze it. Its presence makes the packet grabbable.
func metaKey(id int64) string { return tag(id) + ":meta" }

// unclaimedKey lists the shares not yet grabbed, in grab order ("seq:amount").
func unclaimedKey(id int64) string { return tag(id) + ":unclaimed" }

// claimedByKey maps each user who grabbed to "request:seq:amount:grabbed_ms".
func claimedByKey(id int64) string { return tag(id) + ":claimed_by" }

// claimedKey is the flush queue: claims not yet in SQLite ("user:seq:amount:grabbed_ms").
func claimedKey(id int64) string { return tag(id) + ":claimed" }

// withheldKey lists the shares ("seq:amount") a failover withheld: the old
// node may have given them (ceiling.go). They are refunded at the expiry.
func withheldKey(id int64) string { return tag(id) + ":withheld" }

// processingKey holds the batch of claims a flush is writing.
func processingKey(id int64) string { return tag(id) + ":processing" }

// loadingKey marks a packet being loaded into Redis (by its creation or a restore).
func loadingKey(id int64) string { return tag(id) + ":loading" }

// flushQueue is the packet's claimed list as the backend's flush moves it.
func flushQueue(id int64) backend.FlushQueue {
	return backend.FlushQueue{Pending: claimedKey(id), Processing: processingKey(id)}
}

// packetKeys are the keys that hold a loaded packet.
func packetKeys(id int64) []string {
	return []string{metaKey(id), unclaimedKey(id), claimedByKey(id), claimedKey(id), processingKey(id), withheldKey(id)}
}

// grabKeys are the keys grabScript touches.
func grabKeys(id int64) []string {
	return []string{metaKey(id), unclaimedKey(id), claimedByKey(id), claimedKey(id)}
}

// flushingKey is the set of packets whose claimed list may hold records;
// filled at load time, never by the grab script, emptied by the flush.
const flushingKey = "redpackets:flushing"
