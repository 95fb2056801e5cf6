package tasks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

type expiryRecorder struct{ expired []int64 }

func (r *expiryRecorder) Expire(_ context.Context, id int64) error {
	r.expired = append(r.expired, id)
	return nil
}

func (r *expiryRecorder) Sweep(context.Context) error { return nil }

// A malformed payload is skipped for good; a good one expires its packet.
func TestRedPacketExpirePayload(t *testing.T) {
	rec := &expiryRecorder{}
	mux := asynq.NewServeMux()
	(&RedPackets{Store: rec}).Register(mux)
	for _, bad := range []string{``, `{`, `{"redpacket_id":0}`, `{"redpacket_id":"7"}`} {
		err := mux.ProcessTask(context.Background(), asynq.NewTask(TypeRedPacketExpire, []byte(bad)))
		if !errors.Is(err, asynq.SkipRetry) {
			t.Fatalf("payload %q: %v, want SkipRetry", bad, err)
		}
	}
	if err := mux.ProcessTask(context.Background(), NewRedPacketExpireTask(7, time.Now())); err != nil || len(rec.expired) != 1 || rec.expired[0] != 7 {
		t.Fatalf("good payload: %v, expired %v", err, rec.expired)
	}
}
