package tokens

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
)

// ImageDimensions reads the pixel width and height of a base64-encoded PNG, GIF, WebP
// (VP8, VP8L or VP8X) or JPEG image from its header. It decodes only the bytes it
// needs: a few dozen for PNG, GIF and WebP; for JPEG, the two-byte headers of the
// segments before the frame header, skipping their bodies undecoded, up to
// jpegScanLimit bytes into the image. The text may start with a data URL prefix
// ("data:image/png;base64,"), contain whitespace or line breaks, use the URL-safe
// alphabet and lack padding. ok is false when the format is not recognised or the
// header is cut off or corrupt.
func ImageDimensions(b64 string) (w, h int, ok bool) {
	s := strings.TrimLeft(b64, " \t\r\n")
	if strings.HasPrefix(s, "data:") {
		head := s[:min(len(s), 512)]
		i := strings.IndexByte(head, ',')
		if i < 0 {
			return 0, 0, false
		}
		s = s[i+1:]
	}
	r := &b64Reader{s: s}
	hdr := r.at(0, 32)
	switch {
	case len(hdr) >= 8 && string(hdr[:8]) == "\x89PNG\r\n\x1a\n":
		return pngSize(r)
	case len(hdr) >= 10 && (string(hdr[:6]) == "GIF87a" || string(hdr[:6]) == "GIF89a"):
		w, h = int(binary.LittleEndian.Uint16(hdr[6:])), int(binary.LittleEndian.Uint16(hdr[8:]))
		return w, h, w > 0 && h > 0
	case len(hdr) >= 16 && string(hdr[:4]) == "RIFF" && string(hdr[8:12]) == "WEBP":
		return webpSize(hdr)
	case len(hdr) >= 3 && hdr[0] == 0xFF && hdr[1] == 0xD8 && hdr[2] == 0xFF:
		return jpegSize(r)
	}
	return 0, 0, false
}

// pngSize reads IHDR, the first chunk (after Apple's CgBI chunk in iOS-optimised files).
func pngSize(r *b64Reader) (w, h int, ok bool) {
	off := 8
	for range 2 {
		c := r.at(off, 16) // length, type, width, height
		if len(c) < 16 {
			return 0, 0, false
		}
		switch string(c[4:8]) {
		case "IHDR":
			w, h = int(binary.BigEndian.Uint32(c[8:])), int(binary.BigEndian.Uint32(c[12:]))
			return w, h, w > 0 && h > 0
		case "CgBI":
			off += 12 + int(binary.BigEndian.Uint32(c[0:]))
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// webpSize reads the first chunk of a WebP file, which holds the canvas size.
func webpSize(hdr []byte) (w, h int, ok bool) {
	if len(hdr) < 30 {
		return 0, 0, false
	}
	d := hdr[20:] // the first chunk's payload
	switch string(hdr[12:16]) {
	case "VP8X": // flags, 3 reserved bytes, then width-1 and height-1 in 24 bits each
		w = 1 + (int(d[4]) | int(d[5])<<8 | int(d[6])<<16)
		h = 1 + (int(d[7]) | int(d[8])<<8 | int(d[9])<<16)
		return w, h, true
	case "VP8L": // signature 0x2f, then width-1 and height-1 in 14 bits each
		if d[0] != 0x2f {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(d[1:])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, true
	case "VP8 ": // 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height
		if d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a {
			return 0, 0, false
		}
		w = int(binary.LittleEndian.Uint16(d[6:]) & 0x3fff)
		h = int(binary.LittleEndian.Uint16(d[8:]) & 0x3fff)
		return w, h, w > 0 && h > 0
	}
	return 0, 0, false
}

// jpegScanLimit is how far into a JPEG the frame header is looked for. Only segment
// headers are decoded, so the limit bounds the whitespace-stripping copy, not decoding;
// EXIF thumbnails, ICC profiles and XMP packets before the frame header rarely add up to
// more than a few hundred KB, and photos put their frame header near the start.
const jpegScanLimit = 1 << 20

// jpegSize walks the marker segments to the first start-of-frame (SOFn) header.
func jpegSize(r *b64Reader) (w, h int, ok bool) {
	off := 2
	for off < jpegScanLimit {
		m := r.at(off, 2)
		if len(m) < 2 || m[0] != 0xFF {
			return 0, 0, false
		}
		marker := m[1]
		switch {
		case marker == 0xFF: // fill byte before a marker
			off++
			continue
		case marker == 0x01 || marker == 0xD8 || marker >= 0xD0 && marker <= 0xD7: // no length
			off += 2
			continue
		case marker == 0xD9 || marker == 0xDA: // end of image or scan data before any frame
			return 0, 0, false
		}
		seg := r.at(off+2, 7) // length, precision, height, width
		if len(seg) < 2 {
			return 0, 0, false
		}
		length := int(binary.BigEndian.Uint16(seg))
		if length < 2 {
			return 0, 0, false
		}
		if marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
			if len(seg) < 7 {
				return 0, 0, false
			}
			h, w = int(binary.BigEndian.Uint16(seg[3:])), int(binary.BigEndian.Uint16(seg[5:]))
			// A height of 0 means it is given later by a DNL marker; not worth chasing.
			return w, h, w > 0 && h > 0
		}
		off += 2 + length
	}
	return 0, 0, false
}

// b64Reader decodes byte ranges of base64 text on demand. Every 4 characters decode to
// 3 bytes independently of the rest, so a range is decoded from its own characters only;
// skipped ranges are never decoded. Whitespace breaks that arithmetic, so characters
// are copied without it into clean as far as has been read.
type b64Reader struct {
	s     string
	pos   int    // bytes of s copied into clean
	clean []byte // s[:pos] without whitespace
}

// chars returns the base64 characters [start, end) (fewer at the end of the text).
func (r *b64Reader) chars(start, end int) []byte {
	for len(r.clean) < end && r.pos < len(r.s) {
		c := r.s[r.pos]
		r.pos++
		switch c {
		case ' ', '\t', '\r', '\n', '\f', '\v':
			continue
		case '-':
			c = '+'
		case '_':
			c = '/'
		}
		r.clean = append(r.clean, c)
	}
	end = min(end, len(r.clean))
	if start >= end {
		return nil
	}
	return r.clean[start:end]
}

// at decodes up to n bytes starting at byte offset off; fewer at the end of the data or
// at the first character that is not base64.
func (r *b64Reader) at(off, n int) []byte {
	if off < 0 || n <= 0 {
		return nil
	}
	q := off / 3
	src := r.chars(4*q, 4*((off+n+2)/3))
	if i := indexByte(src, '='); i >= 0 {
		src = src[:i]
	}
	if len(src)%4 == 1 {
		src = src[:len(src)-1]
	}
	dst := make([]byte, base64.RawStdEncoding.DecodedLen(len(src)))
	k, _ := base64.RawStdEncoding.Decode(dst, src)
	dst = dst[:k]
	skip := off - 3*q
	if skip >= len(dst) {
		return nil
	}
	dst = dst[skip:]
	return dst[:min(n, len(dst))]
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// Image costs when the pixel size cannot be read: the most an image can cost under
// each provider's rules, so an unreadable image never makes a budget look roomier
// than it is.
const (
	DefaultAnthropicImageTokens = anthropicMaxTokens // 1600
	DefaultOpenAIImageTokens    = 85 + 170*8         // 1445: 768x2048 after scaling, 2x4 tiles
)

const (
	anthropicMaxEdge   = 1568
	anthropicPxPerTok  = 750
	anthropicMaxTokens = 1600
)

// AnthropicImageTokens is what Claude charges for an image of w x h pixels, following
// Anthropic's published rule: an image whose long edge exceeds 1568 px, or whose cost
// would exceed about 1,600 tokens, is first scaled down (aspect ratio kept) until it fits
// both limits; it then costs w*h/750 tokens. Here the scaling floors to whole pixels, the
// area limit is 1600*750 = 1.2 megapixels and the cost rounds up: 200x200 costs 54,
// 1000x1000 costs 1334, 1092x1092 (the largest square not scaled) 1590, anything larger
// at most 1600. An unknown size (w or h <= 0) costs DefaultAnthropicImageTokens.
func AnthropicImageTokens(w, h int) int {
	if w <= 0 || h <= 0 {
		return DefaultAnthropicImageTokens
	}
	if long := max(w, h); long > anthropicMaxEdge {
		w, h = scale(w, h, float64(anthropicMaxEdge)/float64(long))
	}
	if area := w * h; area > anthropicMaxTokens*anthropicPxPerTok {
		w, h = scale(w, h, math.Sqrt(float64(anthropicMaxTokens*anthropicPxPerTok)/float64(area)))
	}
	return min((w*h+anthropicPxPerTok-1)/anthropicPxPerTok, anthropicMaxTokens)
}

func scale(w, h int, f float64) (int, int) {
	return max(1, int(float64(w)*f)), max(1, int(float64(h)*f))
}

// OpenAIImageTokens is what OpenAI's GPT-4o, GPT-4.1, o-series and GPT-5 models charge
// for an image of w x h pixels at the given detail. "low" costs 85 tokens whatever the
// size. Otherwise ("high", "auto" or unset; auto is priced as high since the server
// picks) the image is scaled down to fit in 2048x2048, then down again so its shorter
// side is at most 768 px, and costs 85 plus 170 per 512-px tile covering it: 1024x1024
// becomes 768x768, 4 tiles, 765 tokens; 2048x4096 becomes 768x1536, 6 tiles, 1105.
// An unknown size (w or h <= 0) costs DefaultOpenAIImageTokens (85 when detail is low).
// Models that OpenAI bills by 32-px patches instead (such as gpt-4.1-mini) are priced
// by the tile rule too.
func OpenAIImageTokens(w, h int, detail string) int {
	if strings.EqualFold(strings.TrimSpace(detail), "low") {
		return 85
	}
	if w <= 0 || h <= 0 {
		return DefaultOpenAIImageTokens
	}
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > 2048 {
		fw, fh = fw*2048/long, fh*2048/long
	}
	if short := min(fw, fh); short > 768 {
		fw, fh = fw*768/short, fh*768/short
	}
	tiles := func(x float64) int { return int(math.Ceil(x/512 - 1e-9)) }
	return 85 + 170*tiles(fw)*tiles(fh)
}
