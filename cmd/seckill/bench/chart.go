package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var (
	white   = color.RGBA{255, 255, 255, 255}
	ink     = color.RGBA{29, 35, 48, 255}
	grid    = color.RGBA{227, 230, 238, 255}
	palette = []color.RGBA{{229, 50, 45, 255}, {31, 120, 180, 255}, {51, 160, 44, 255}, {255, 127, 0, 255}, {106, 61, 154, 255}, {177, 89, 40, 255}}
)

// WriteChart draws throughput per scenario (left) and latency percentiles
// per scenario on a log scale (right) into a PNG file.
func (r *Report) WriteChart(path string) error {
	const w, h = 1200, 520
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	text(img, 20, 24, fmt.Sprintf("seckill bench - %s", r.Machine))

	left := image.Rect(60, 60, 560, 440)
	text(img, left.Min.X, 50, "throughput (requests/s)")
	maxTP := 1.0
	for _, res := range r.Results {
		maxTP = math.Max(maxTP, res.Throughput)
	}
	maxTP *= 1.1 // headroom for the value labels
	axes(img, left, 0, maxTP, false)
	n := len(r.Results)
	for i, res := range r.Results {
		bw := left.Dx() / max(n, 1)
		x0 := left.Min.X + i*bw + bw/6
		y0 := left.Max.Y - int(res.Throughput/maxTP*float64(left.Dy()))
		fill(img, image.Rect(x0, y0, x0+bw*2/3, left.Max.Y), palette[i%len(palette)])
		text(img, x0, y0-4, fmt.Sprintf("%.0f", res.Throughput))
	}

	right := image.Rect(660, 60, 1160, 440)
	text(img, right.Min.X, 50, "latency ms (log): p50 p90 p99 p99.9 max")
	lo, hi := math.Inf(1), 1.0
	for _, res := range r.Results {
		hi = math.Max(hi, res.Latency.Max)
		lo = math.Min(lo, res.Latency.P50)
	}
	lo = math.Max(0.001, math.Min(lo, hi)/2)
	hi *= 1.5
	axes(img, right, lo, hi, true)
	logY := func(v float64) int {
		v = math.Max(v, lo)
		f := (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		return right.Max.Y - int(f*float64(right.Dy()))
	}
	for i, res := range r.Results {
		l := res.Latency
		pts := []float64{l.P50, l.P90, l.P99, l.P999, l.Max}
		step := right.Dx() / (len(pts) - 1)
		c := palette[i%len(palette)]
		for k := 0; k+1 < len(pts); k++ {
			line(img, right.Min.X+k*step, logY(pts[k]), right.Min.X+(k+1)*step, logY(pts[k+1]), c)
		}
		for k, v := range pts {
			fill(img, image.Rect(right.Min.X+k*step-3, logY(v)-3, right.Min.X+k*step+3, logY(v)+3), c)
		}
	}
	for k, name := range []string{"p50", "p90", "p99", "p99.9", "max"} {
		text(img, right.Min.X+k*right.Dx()/4-10, right.Max.Y+16, name)
	}

	// Legend.
	for i, res := range r.Results {
		x, y := 60+(i%3)*380, 470+(i/3)*20
		fill(img, image.Rect(x, y-9, x+12, y+1), palette[i%len(palette)])
		text(img, x+18, y, res.Name)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func axes(img *image.RGBA, r image.Rectangle, lo, hi float64, logScale bool) {
	for k := 0; k <= 4; k++ {
		y := r.Max.Y - k*r.Dy()/4
		line(img, r.Min.X, y, r.Max.X, y, grid)
		v := lo + (hi-lo)*float64(k)/4
		if logScale {
			v = math.Pow(10, math.Log10(lo)+(math.Log10(hi)-math.Log10(lo))*float64(k)/4)
		}
		text(img, r.Min.X-55, y+4, short(v))
	}
	line(img, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y, ink)
	line(img, r.Min.X, r.Max.Y, r.Max.X, r.Max.Y, ink)
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for s := 0; s <= steps; s++ {
		img.Set(x0+(x1-x0)*s/steps, y0+(y1-y0)*s/steps, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func text(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(ink), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
