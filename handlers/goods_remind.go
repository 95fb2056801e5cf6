package handlers

import (
	"context"

	"github.com/seckill/seckill/db/model"
)

// userReminders lists every reminder the user booked, coupons' and goods', soonest first.
func (h *Reminders) userReminders(ctx context.Context, userID int64) ([]model.BookedReminder, error) {
	cs, err := h.Coupons.Mine(ctx, userID)
	if err != nil {
		return nil, err
	}
	gs, err := h.Goods.Mine(ctx, userID)
	if err != nil {
		return nil, err
	}
	return model.MergeReminders(cs, gs), nil
}
