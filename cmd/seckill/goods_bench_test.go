package main

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
)

// BenchmarkGrabHTTP measures POST /api/goods/{id}/grab through the whole
// server (auth from the signed token, Lua grab, expiry enqueue, JSON), with
// keep-alive connections and a new user per request.
func BenchmarkGrabHTTP(b *testing.B) {
	a := startApp(b)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	ids := make([]int64, b.N/int(model.GoodsStock.Max)+1)
	for i := range ids {
		ids[i] = a.createGoods(mt, sl.ID, model.GoodsStock.Max, 1).ID
	}
	tokens := make([]string, b.N)
	for i := range tokens { // users exist only in tokens: the grab path looks nothing up
		tokens[i] = a.Tokens.SignClaims(model.Claims{UserID: int64(1_000_000 + i), Username: "bench", Role: model.RoleUser, Expires: time.Now().Add(time.Hour).Unix()})
	}
	client := testCrowdClient(256, 0)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16) // 16 goroutines per CPU: the work is mostly waiting on Redis
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, ids[i/model.GoodsStock.Max]), nil)
			req.Header.Set("Authorization", "Bearer "+tokens[i])
			res, err := client.Do(req)
			if err != nil {
				b.Errorf("grab: %v", err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				b.Errorf("grab: status %d", res.StatusCode)
				return
			}
		}
	})
}
