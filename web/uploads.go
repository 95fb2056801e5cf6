package web

import (
	"bytes"
	"regexp"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
)

// UploadLimit is the largest body of a picture upload: the picture
// (goods.MaxImageBytes) and the multipart form around it.
const UploadLimit = goods.MaxImageBytes + 64<<10

// uploadPath matches the routes that take a picture: the API's and the admin page's.
var uploadPath = regexp.MustCompile(`^/(api/)?admin/goods/[0-9]+/image$`)

// errUploadTooLarge is the answer to an upload over UploadLimit.
var errUploadTooLarge = db.Errorf(db.ETOOLARGE, "the picture is larger than 2 MiB")

// bodyLimits are the largest body a request to path may carry, the largest
// refused body drained rather than cut off, and the refusal: BodyLimit for
// every route but the picture uploads.
func bodyLimits(path []byte) (limit, drain int, tooLarge error) {
	if bytes.HasSuffix(path, []byte("/image")) && uploadPath.Match(path) {
		return UploadLimit, UploadLimit + drainLimit, errUploadTooLarge
	}
	return BodyLimit, drainLimit, errTooLarge
}
