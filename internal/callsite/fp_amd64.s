//go:build !purego

#include "textflag.h"

// The frame walks of fp.go. On amd64 a Go function that has a frame keeps
// its frame pointer in BP: the word at BP holds its caller's frame pointer
// and the word above it the function's return address. These functions have
// no frame (NOFRAME), so BP is their caller's frame pointer. Neither calls
// anything or can be preempted, so the stack cannot move under the walk.

// func walk(pcs []uintptr) (n int, status int)
TEXT ·walk(SB), NOSPLIT|NOFRAME, $0-40
	MOVQ	pcs_base+0(FP), DI
	MOVQ	pcs_len+8(FP), SI
	MOVQ	BP, DX
	XORQ	AX, AX
	MOVQ	$0, CX // statusFull
walkloop:
	CMPQ	AX, SI
	JGE	walkdone
	MOVQ	8(DX), R8
	MOVQ	R8, (DI)(AX*8)
	INCQ	AX
	MOVQ	0(DX), R9
	TESTQ	R9, R9
	JZ	walkend
	CMPQ	R9, DX
	JLS	walkbad // the caller's frame must be above this one
	MOVQ	R9, R10
	SUBQ	DX, R10
	CMPQ	R10, $0x1000000
	JHI	walkbad // and less than 16 MiB above it
	MOVQ	R9, DX
	JMP	walkloop
walkend:
	MOVQ	$1, CX // statusEnd
	JMP	walkdone
walkbad:
	MOVQ	$2, CX // statusBad
walkdone:
	MOVQ	AX, n+24(FP)
	MOVQ	CX, status+32(FP)
	RET

// func find(pc uintptr, limit int) (status int, last uintptr)
TEXT ·find(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ	pc+0(FP), DI
	MOVQ	limit+8(FP), SI
	MOVQ	BP, DX
	XORQ	R8, R8
findloop:
	TESTQ	SI, SI
	JLE	findbad // the limit counts as a failed walk
	DECQ	SI
	MOVQ	8(DX), R8
	CMPQ	R8, DI
	JEQ	findfound
	MOVQ	0(DX), R9
	TESTQ	R9, R9
	JZ	findend
	CMPQ	R9, DX
	JLS	findbad
	MOVQ	R9, R10
	SUBQ	DX, R10
	CMPQ	R10, $0x1000000
	JHI	findbad
	MOVQ	R9, DX
	JMP	findloop
findfound:
	MOVQ	$3, AX // statusFound
	JMP	finddone
findend:
	MOVQ	$1, AX // statusEnd
	JMP	finddone
findbad:
	MOVQ	$2, AX // statusBad
finddone:
	MOVQ	AX, status+16(FP)
	MOVQ	R8, last+24(FP)
	RET

// func getg() uintptr
//
// The calling goroutine's g, which the runtime keeps in thread-local
// storage: an identity of the goroutine while it lives.
TEXT ·getg(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	TLS, CX
	MOVQ	0(CX)(TLS*1), AX
	MOVQ	AX, ret+0(FP)
	RET
