package handlers

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
	"github.com/seckill/seckill/views/i18n"
)

// now is the process's clock.
func (h *Site) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// log is where the handlers note what they cannot answer.
func (h *Site) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// homeSlots is how many of the live and upcoming slots the front page shows
// (soonest first); the rest are a click away on /slots.
const homeSlots = 3

// Home shows the shopper's start page: GET /. Its slots and goods come
// from the catalog in memory; a reader who is not signed in gets the page
// rendered once per change and language (sharedPage).
func (h *Site) Home(c *fiber.Ctx) error {
	ctx := c.UserContext()
	packets, coupons, cardsSeq, err := h.homeCards().get(ctx, h.Shelves, h.now())
	if err != nil {
		return err
	}
	version := ""
	if v := h.Shelves.Goods.Version(ctx); v != "" {
		version = v + "/" + strconv.FormatUint(cardsSeq, 10)
	}
	return h.sharedPage(c, "home", version, func(p views.Page) (templ.Component, error) {
		cl, _ := ClaimsOf(c)
		slots, err := h.Shelves.Goods.Slots(ctx)
		if err != nil {
			return nil, err
		}
		v := views.HomeView{RedPackets: packets, Coupons: coupons}
		for _, sl := range slots[:min(len(slots), homeSlots)] {
			gs, err := h.Shelves.Goods.ShopperSlotGoods(ctx, cl, sl.ID)
			if err != nil {
				return nil, err
			}
			if len(gs) > 0 {
				v.Sales = append(v.Sales, views.HomeSlot{Slot: sl, Goods: gs})
			}
		}
		if ownIn(p) && len(v.Sales) > 0 {
			orders, err := h.Shelves.Goods.MyOrders(ctx, cl.UserID)
			if err != nil {
				return nil, err
			}
			v.Held = views.HeldByGoods(orders)
		}
		p.Title = "Flash sales"
		return views.HomePage(p, v), nil
	})
}

// sharedPage answers a page that readers read alike: rendered once per
// version, language and steering switches, then served from memory with
// its ETag. A reader not signed in gets it public (a proxy may keep it a
// second); a signed-in shopper gets the shoppers' form of it, private,
// their name and CSRF token spliced into the top bar, their own orders and
// reminders fetched by the page's script (make sees p.FetchOwn and leaves
// them out). A merchant's page (it shows what they own), one that carries
// a one-time message, or a read the catalog does not hold in memory
// (version "") is rendered for this request alone.
func (h *Site) sharedPage(c *fiber.Ctx, name, version string, make func(p views.Page) (templ.Component, error)) error {
	cl, signedIn := ClaimsOf(c)
	if version == "" || c.Cookies(flashCookie) != "" || (signedIn && staffRole(cl.Role)) {
		comp, err := make(h.page(c, ""))
		if err != nil {
			return err
		}
		body, err := renderBytes(c, comp)
		if err != nil {
			return err
		}
		return sendPrivate(c, fiber.StatusOK, typeHTML, body)
	}
	// The document's name and version are put together on the stack (docs.get keeps its own copies).
	var buf [256]byte
	b := append(append(append(append(buf[:0], "page:"...), name...), '|'), i18n.Of(c.UserContext())...)
	b = append(append(b, '|'), c.Path()...)
	if signedIn {
		b = append(append(b, '|'), cl.Role...)
	}
	key := len(b)
	b = append(append(append(b, version...), '|'), h.switchesKey()...)
	d, err := h.docs.get(utils.UnsafeString(b[:key]), utils.UnsafeString(b[key:]), typeHTML, func() ([]byte, error) {
		p := h.page(c, "")
		if signedIn {
			p.User = &views.PageUser{Username: markUser, Role: cl.Role}
			p.CSRF = markCSRF
			p.FetchOwn = true
		}
		comp, err := make(p)
		if err != nil {
			return nil, err
		}
		return renderBytes(c, comp)
	})
	if err != nil {
		return err
	}
	if !signedIn {
		return d.send(c, cachePublic, fiber.HeaderAcceptLanguage, fiber.HeaderCookie)
	}
	sd, err := d.splicedForm()
	if err != nil {
		return err
	}
	return sd.send(c, cl.Username, csrfToken(c))
}

// staffRole reports whether role sees more than a shopper does (what they own, the steering links).
func staffRole(role string) bool { return role == "merchant" || role == "admin" }

// ownIn reports whether the page p is made for its reader alone, with their
// own orders and reminders in it (not fetched by its script).
func ownIn(p views.Page) bool { return p.User != nil && !p.FetchOwn }

// AdminDashboard (handlers/merchant.go) shows the merchant area's start page.

// ErrorPage renders a friendly HTML error page; web's error handler calls it.
func (h *Site) ErrorPage(c *fiber.Ctx, status int, message string) error {
	return render(c, status, views.ErrorPage(h.page(c, "Something went wrong"), status, message))
}

// switchesKey names the steering switches in force (a page shows a banner
// while one is set), worked out again only when they change.
func (h *Site) switchesKey() string {
	sw := h.Switches.Current()
	if k := h.swKey.Load(); k != nil && k.sw == sw {
		return k.key
	}
	k := &switchesKeyed{sw: sw, key: fmt.Sprintf("%+v", sw)}
	h.swKey.Store(k)
	return k.key
}

type switchesKeyed struct {
	sw  model.Switches
	key string
}
