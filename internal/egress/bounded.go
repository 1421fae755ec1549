package egress

import (
	"io"
	"os"
)

// boundedLog keeps the decision log within its cap. The writer cannot be
// rotated (the runtime owns the file), so the log stops: the last line the
// cap allows says so, and what follows is counted, not written. A log that
// is a file starts from its size, so restarts do not grow it past the cap.
type boundedLog struct {
	target  io.Writer
	written int64
	stopped bool
	dropped int64
}

// noticeReserve is room kept for the notice line (about 300 bytes).
const noticeReserve = 512

// write writes line to w unless that would pass max with room left for the
// notice; the first line refused writes the notice instead. Callers hold
// the gateway's log lock.
func (b *boundedLog) write(w io.Writer, max int64, line []byte, notice func() []byte) {
	if b.target != w {
		*b = boundedLog{target: w}
		if f, ok := w.(interface{ Stat() (os.FileInfo, error) }); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				b.written = fi.Size()
			}
		}
	}
	if b.stopped {
		b.dropped++
		return
	}
	if b.written+int64(len(line))+noticeReserve > max {
		b.stopped, b.dropped = true, 1
		if n := notice(); b.written+int64(len(n)) <= max {
			k, _ := w.Write(n)
			b.written += int64(k)
		}
		return
	}
	k, _ := w.Write(line)
	b.written += int64(k)
}
