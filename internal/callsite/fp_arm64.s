//go:build !purego

#include "textflag.h"

// The frame walks of fp.go. On arm64 a Go function that has a frame keeps
// its frame pointer in R29: the word at R29 holds its caller's frame
// pointer and the word above it the function's return address (the saved
// link register). These functions have no frame (NOFRAME), so R29 is their
// caller's frame pointer. Neither calls anything or can be preempted, so
// the stack cannot move under the walk.

// func walk(pcs []uintptr) (n int, status int)
TEXT ·walk(SB), NOSPLIT|NOFRAME, $0-40
	MOVD	pcs_base+0(FP), R0
	MOVD	pcs_len+8(FP), R1
	MOVD	R29, R2
	MOVD	$0, R3
	MOVD	$0, R4 // statusFull
	MOVD	$0x1000000, R8
walkloop:
	CMP	R1, R3
	BGE	walkdone
	MOVD	8(R2), R5
	MOVD	R5, (R0)(R3<<3)
	ADD	$1, R3
	MOVD	0(R2), R6
	CBZ	R6, walkend
	CMP	R2, R6
	BLS	walkbad // the caller's frame must be above this one
	SUB	R2, R6, R7
	CMP	R8, R7
	BHI	walkbad // and less than 16 MiB above it
	MOVD	R6, R2
	B	walkloop
walkend:
	MOVD	$1, R4 // statusEnd
	B	walkdone
walkbad:
	MOVD	$2, R4 // statusBad
walkdone:
	MOVD	R3, n+24(FP)
	MOVD	R4, status+32(FP)
	RET

// func find(pc uintptr, limit int) (status int, last uintptr)
TEXT ·find(SB), NOSPLIT|NOFRAME, $0-32
	MOVD	pc+0(FP), R0
	MOVD	limit+8(FP), R1
	MOVD	R29, R2
	MOVD	$0, R5
	MOVD	$0x1000000, R8
findloop:
	CMP	$0, R1
	BLE	findbad // the limit counts as a failed walk
	SUB	$1, R1
	MOVD	8(R2), R5
	CMP	R0, R5
	BEQ	findfound
	MOVD	0(R2), R6
	CBZ	R6, findend
	CMP	R2, R6
	BLS	findbad
	SUB	R2, R6, R7
	CMP	R8, R7
	BHI	findbad
	MOVD	R6, R2
	B	findloop
findfound:
	MOVD	$3, R4 // statusFound
	B	finddone
findend:
	MOVD	$1, R4 // statusEnd
	B	finddone
findbad:
	MOVD	$2, R4 // statusBad
finddone:
	MOVD	R4, status+16(FP)
	MOVD	R5, last+24(FP)
	RET

// func getg() uintptr
//
// The calling goroutine's g, which the runtime keeps in register g (R28):
// an identity of the goroutine while it lives.
TEXT ·getg(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	g, R0
	MOVD	R0, ret+0(FP)
	RET
