package inbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// Notifications added in a transaction are listed newest first with their
// time to the millisecond, counted while unread, and marked read per user.
func TestInbox(t *testing.T) {
	ctx := context.Background()
	sq := dbtest.DB(t)
	box := &inbox.Service{Backend: backend.New(sq, dbtest.Redis(t).Client)}
	var users []int64
	for _, name := range []string{"ann", "ben"} {
		var id int64
		if err := sq.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, 'x', 'user', 1893456000000) RETURNING id`, name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		users = append(users, id)
	}
	ann, ben := users[0], users[1]

	at := time.Date(2030, 5, 1, 8, 0, 0, 123456789, time.UTC)
	var added []map[int64]model.Notification
	for i, msg := range []string{"first", "second"} {
		err := sq.Tx(ctx, func(tx *sql.Tx) error {
			byUser, err := inbox.Add(ctx, tx, users[:2-i], model.Notification{Kind: model.NotificationCouponReminder, CouponID: 3, Message: msg, CreatedAt: at})
			added = append(added, byUser)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(added[0]) != 2 || len(added[1]) != 1 || added[0][ann].ID == added[0][ben].ID || added[1][ann].Message != "second" {
		t.Fatalf("added %+v", added)
	}

	list, err := box.List(ctx, ann)
	if err != nil || len(list) != 2 || list[0].Message != "second" || list[1].Message != "first" {
		t.Fatalf("ann's inbox = %+v, %v; want second, then first", list, err)
	}
	if want := at.Truncate(time.Millisecond); !list[0].CreatedAt.Equal(want) || list[0].CouponID != 3 || list[0].Read {
		t.Fatalf("notification = %+v; want unread, coupon 3, at %s", list[0], want)
	}
	if n, err := box.Unread(ctx, ann); err != nil || n != 2 {
		t.Fatalf("ann's unread = %d, %v; want 2", n, err)
	}
	if err := box.MarkRead(ctx, ann); err != nil {
		t.Fatal(err)
	}
	if n, _ := box.Unread(ctx, ann); n != 0 {
		t.Fatalf("ann's unread after marking = %d", n)
	}
	if n, _ := box.Unread(ctx, ben); n != 1 {
		t.Fatalf("ben's unread = %d, want 1 (marking ann's inbox left his alone)", n)
	}

	msgs := inbox.Messages(added[1])
	var ev model.NotificationEvent
	if len(msgs) != 1 || msgs[0].Topic != live.TopicUser(ann) || json.Unmarshal(msgs[0].Event, &ev) != nil ||
		ev.Type != "notification" || ev.Notification.ID != added[1][ann].ID {
		t.Fatalf("messages = %+v (event %+v)", msgs, ev)
	}
}
