package goods

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// MaxImageBytes is the largest picture a merchant may upload.
const MaxImageBytes = 2 << 20

// imageTypes are the picture formats taken, by the type content sniffing finds.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/gif": true}

var imageHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Image is a stored picture.
type Image struct {
	Hash        string // hex SHA-256 of Data: the picture's name and ETag
	ContentType string
	Data        []byte
}

// SetImage gives goods of the caller's a picture. Its type comes from its
// bytes (PNG, JPEG, WebP or GIF), never from what the client said; more
// than MaxImageBytes is too_large. Pictures are kept in the durable store,
// named by their SHA-256, so every web process serves them and one picture
// used twice is stored once.
func (s *Service) SetImage(ctx context.Context, by model.Claims, id int64, data []byte) (_ *model.Goods, err error) {
	defer s.announce(ctx, &err)
	if _, err := s.Owned(ctx, by, id); err != nil {
		return nil, err
	}
	if len(data) > MaxImageBytes {
		return nil, db.Errorf(db.ETOOLARGE, "the picture is larger than 2 MiB")
	}
	if len(data) == 0 {
		return nil, db.FieldErrorf("image", "is required")
	}
	ct := http.DetectContentType(data)
	if !imageTypes[ct] {
		return nil, db.FieldErrorf("image", "must be a PNG, JPEG, WebP or GIF picture")
	}
	if err := s.storeImage(ctx, id, data, ct); err != nil {
		return nil, err
	}
	return s.Get(ctx, id)
}

// setDemoPicture gives demo goods one of the project's own pictures, an SVG
// (which SetImage refuses from a merchant: a picture they upload is a
// bitmap whose type its bytes tell).
func (s *Service) setDemoPicture(ctx context.Context, id int64, svg []byte) (err error) {
	defer s.announce(ctx, &err)
	return s.storeImage(ctx, id, svg, "image/svg+xml")
}

// storeImage keeps data, of type ct, as the picture of goods id.
func (s *Service) storeImage(ctx context.Context, id int64, data []byte, ct string) error {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO images (hash, content_type, data, created_ms) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			hash, ct, data, s.Now().UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE goods SET image = ? WHERE id = ?`, hash, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store the picture of goods %d: %w", id, err)
	}
	return nil
}

// Image returns a stored picture by its hash.
func (s *Service) Image(ctx context.Context, hash string) (*Image, error) {
	if !imageHash.MatchString(hash) {
		return nil, db.Errorf(db.ENOTFOUND, "no such picture")
	}
	img := &Image{Hash: hash}
	err := s.SQL.R.QueryRowContext(ctx, `SELECT content_type, data FROM images WHERE hash = ?`, hash).Scan(&img.ContentType, &img.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "no such picture")
	}
	if err != nil {
		return nil, err
	}
	return img, nil
}

// ImagePath is where pictures are served; a picture's URL is ImagePath and its hash.
const ImagePath = sale.ImagePath
