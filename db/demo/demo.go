// Package demo fills an empty platform with something to try (DEMO=true):
// a shopper, a merchant and each promotion's demo items.
package demo

import (
	"context"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// The demo accounts, printed at start.
const (
	Shopper          = "shopper"
	ShopperPassword  = "shopper123"
	Merchant         = "demo_merchant"
	MerchantPassword = "merchant123"
)

// Accounts creates and finds users.
type Accounts interface {
	CreateUser(ctx context.Context, username, password, role string) (*model.User, error)
	UserByName(ctx context.Context, username string) (*model.User, error)
}

// Seeder adds one promotion's demo items owned by the merchant. It must
// leave existing data alone, so seeding again at each start is harmless.
type Seeder interface {
	SeedDemo(ctx context.Context, merchant *model.User) error
}

// Seed makes sure the demo accounts exist, then runs each seeder.
func Seed(ctx context.Context, accounts Accounts, seeders ...Seeder) error {
	if _, err := user(ctx, accounts, Shopper, ShopperPassword, model.RoleUser); err != nil {
		return err
	}
	merchant, err := user(ctx, accounts, Merchant, MerchantPassword, model.RoleMerchant)
	if err != nil {
		return err
	}
	for _, s := range seeders {
		if err := s.SeedDemo(ctx, merchant); err != nil {
			return err
		}
	}
	return nil
}

// user creates the account, or finds it when it exists already.
func user(ctx context.Context, accounts Accounts, name, password, role string) (*model.User, error) {
	u, err := accounts.CreateUser(ctx, name, password, role)
	if db.ErrorCode(err) == db.ECONFLICT {
		return accounts.UserByName(ctx, name)
	}
	return u, err
}
