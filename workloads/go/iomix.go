// iomix.go: the iomix workload, mirroring workloads/iomix/iomix.cpp.
//
// The seeds' mixed program: each of `tasks` goroutines runs half of its loop iterations, reads
// whole files (reads-per-task of them, file (i + r) mod files for read r of goroutine i), then
// runs the other half; a sync.WaitGroup joins them. os.ReadFile's read(2) goes through
// syscall.Syscall, so Go's runtime brackets it with entersyscall/exitsyscall: the goroutine's
// thread keeps its P, marked _Psyscall, and takes it back with one CAS when the read returns.
// A read served from the page cache (warm) therefore costs two atomic operations and no thread
// switch. Only a read that lasts is noticed: sysmon, looking every 20 µs while it finds such
// calls, takes back a P it saw in the same call twice (retake) and hands it to another thread
// (handoffp), so that the P's other goroutines keep running. The C++ steal-half scheduler does
// the same with --handoff lazy, its default; --handoff eager hands the P over at every call.
//
// The files DIR/file-0 ... DIR/file-(files-1), each file-size bytes, are made (and fsynced) by
// the C++ workload's prepare() in a fresh directory under schedlab's --io-dir, and that
// directory is passed here with --dir. With --cold on, each read first
// drops the file's pages from the page cache, as the C++ version does: open the file and call
// posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED). Go's syscall package has no wrapper for it, so
// it is the raw fadvise64 system call (64-bit Linux: fd, offset, length, advice). The kernel
// drops only clean pages, hence the fsync on the C++ side. The drop is inside the measured
// region on both sides.

package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// POSIX_FADV_DONTNEED in <linux/fadvise.h> (every 64-bit architecture but s390x).
const fadvDontNeed = 4

type iomixWorkload struct {
	tasks, iters, files, fileSize, readsPerTask uint64
	cold                                        bool
	dir                                         string

	bytes, increments atomic.Uint64
	errs              []error // per goroutine: the first read that failed
}

func (w *iomixWorkload) path(file uint64) string { return fmt.Sprintf("%s/file-%d", w.dir, file) }

// dropCache asks the kernel to forget the file's cached pages.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
	if errno != 0 {
		return &fs.PathError{Op: "fadvise", Path: path, Err: errno}
	}
	return nil
}

func (w *iomixWorkload) read(path string) (uint64, error) {
	if w.cold {
		if err := dropCache(path); err != nil {
			return 0, err
		}
	}
	data, err := os.ReadFile(path)
	return uint64(len(data)), err
}

func (w *iomixWorkload) run() {
	w.bytes.Store(0)
	w.increments.Store(0)
	for t := range w.errs {
		w.errs[t] = nil
	}
	var wg sync.WaitGroup
	wg.Add(int(w.tasks))
	for t := uint64(0); t < w.tasks; t++ {
		go func(t uint64) {
			defer wg.Done()
			before := w.iters / 2
			done := countUp(before)
			var read uint64
			for r := uint64(0); r < w.readsPerTask; r++ {
				path := w.path((t + r) % w.files)
				n, err := w.read(path)
				if err != nil {
					var pathErr *fs.PathError
					if errors.As(err, &pathErr) {
						err = pathErr.Err // the path is in our message already
					}
					w.errs[t] = fmt.Errorf("cannot read %s: %v; the iomix files must stay in place "+
						"while the run lasts (schedlab's iomix prepare() makes them)", path, err)
					break
				}
				read += n
			}
			done += countUp(w.iters - before)
			w.bytes.Add(read)
			w.increments.Add(done)
		}(t)
	}
	wg.Wait()
}

func (w *iomixWorkload) check() error {
	for _, err := range w.errs {
		if err != nil {
			return err
		}
	}
	if got, want := w.bytes.Load(), w.tasks*w.readsPerTask*w.fileSize; got != want {
		return fmt.Errorf("iomix read %d bytes, expected %d "+
			"(--file-size %d does not match the files in %s?)", got, want, w.fileSize, w.dir)
	}
	if got, want := w.increments.Load(), w.tasks*w.iters; got != want {
		return fmt.Errorf("iomix counted %d increments, expected %d", got, want)
	}
	return nil
}

func (w *iomixWorkload) goroutinesPerRun() uint64 { return w.tasks }

func newIomix(flags *flag.FlagSet) func() (workload, error) {
	tasks := flags.Uint64("tasks", 20, "goroutines the root starts")
	iters := flags.Uint64("iters", 1000000, "loop iterations per goroutine, half before the reads")
	files := flags.Uint64("files", 4, "files in --dir")
	fileSize := flags.Uint64("file-size", 64*1024, "bytes per file")
	readsPerTask := flags.Uint64("reads-per-task", 1, "whole-file reads at each goroutine's midpoint")
	cold := flags.String("cold", "off", "on: drop each file's cached pages before reading it")
	dir := flags.String("dir", "", "where file-0 ... file-(files-1) are")
	// schedlab passes every iomix parameter; --io-dir only says where its prepare() made the
	// fresh directory that --dir names, so it is accepted and has no use here.
	flags.String("io-dir", "", "schedlab's --io-dir (unused: the files are in --dir)")
	return func() (workload, error) {
		coldOn, err := onOff("cold", *cold)
		if err != nil {
			return nil, err
		}
		if *files == 0 {
			return nil, fmt.Errorf("--files 0: iomix needs at least one file; use --files 1 or more")
		}
		if *dir == "" {
			return nil, fmt.Errorf("no --dir: give the directory that holds file-0 ... file-%d", *files-1)
		}
		return &iomixWorkload{
			tasks: *tasks, iters: *iters, files: *files, fileSize: *fileSize, readsPerTask: *readsPerTask,
			cold: coldOn, dir: *dir, errs: make([]error, *tasks),
		}, nil
	}
}
