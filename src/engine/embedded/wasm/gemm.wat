;; Matrix product C = A·B (+ bias) over tfjs's wasm heap (imported as env.memory) with fused multiply-adds
;; (`f32x4.relaxed_madd`, relaxed SIMD: one rounding per multiply-add where the CPU has FMA). Run by wasm-gemm.ts, which
;; loads this module only where the runtime validates relaxed SIMD. Source of gemm.wasm.ts: regenerate it with
;; `npx tsx scripts/build-wasm.ts`. Pointers and strides are in bytes; values are float32.
;;
;; Layout: `pack` copies B (K × N, any two strides, so a transposed B costs nothing extra) into column panels of 8:
;; panel p holds B[k][8p .. 8p+7] for k = 0 .. K-1, contiguous, zero-filled past column N; after the panels, the bias
;; (or zeros) padded to a multiple of 8. `gemm` then walks the panels; for each panel, blocks of 4 rows of A
;; (any two strides, so a transposed A costs nothing extra either), keeping the 4 × 8 block of C in 8 registers:
;; per k, two loads of the panel, four splats of A, eight multiply-adds.
(module
  (import "env" "memory" (memory 1))

  ;; Packs B into `bp` (see above): (K rounded to whole panels) · 8 floats, then the bias, N rounded up to 8 floats.
  ;; B[k][n] is at b + k·kStride + n·nStride; bias is 0 (zeros) or N floats.
  (func (export "pack")
    (param $b i32) (param $kStride i32) (param $nStride i32) (param $bias i32) (param $bp i32) (param $K i32)
    (param $N i32)
    (local $n0 i32) (local $k i32) (local $j i32) (local $row i32) (local $dst i32) (local $width i32)
    (local.set $dst (local.get $bp))
    (block $panelsDone (loop $panel
      (br_if $panelsDone (i32.ge_u (local.get $n0) (local.get $N)))
      (local.set $width (i32.sub (local.get $N) (local.get $n0)))
      (local.set $k (i32.const 0))
      (local.set $row (i32.add (local.get $b) (i32.mul (local.get $n0) (local.get $nStride))))
      (block $rowsDone (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $k) (local.get $K)))
        (if (i32.and (i32.eq (local.get $nStride) (i32.const 4)) (i32.ge_u (local.get $width) (i32.const 8)))
          (then
            (v128.store (local.get $dst) (v128.load (local.get $row)))
            (v128.store offset=16 (local.get $dst) (v128.load offset=16 (local.get $row))))
          (else
            (local.set $j (i32.const 0))
            (block $colsDone (loop $cols
              (br_if $colsDone (i32.ge_u (local.get $j) (i32.const 8)))
              (f32.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2)))
                (if (result f32) (i32.lt_u (local.get $j) (local.get $width))
                  (then (f32.load (i32.add (local.get $row) (i32.mul (local.get $j) (local.get $nStride)))))
                  (else (f32.const 0))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $cols)))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 32)))
        (local.set $row (i32.add (local.get $row) (local.get $kStride)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $rows)))
      (local.set $n0 (i32.add (local.get $n0) (i32.const 8)))
      (br $panel)))
    ;; the bias, padded with zeros to whole panels
    (local.set $j (i32.const 0))
    (block $biasDone (loop $biasLoop
      (br_if $biasDone (i32.ge_u (local.get $j) (local.get $n0)))
      (f32.store (local.get $dst)
        (if (result f32) (i32.and (i32.ne (local.get $bias) (i32.const 0)) (i32.lt_u (local.get $j) (local.get $N)))
          (then (f32.load (i32.add (local.get $bias) (i32.shl (local.get $j) (i32.const 2)))))
          (else (f32.const 0))))
      (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $biasLoop))))

  ;; Stores one row's 8 columns (lo, hi) of panel `col0` at `dst`, or only its first `width` of them when under 8.
  (func $storeRow (param $dst i32) (param $lo v128) (param $hi v128) (param $width i32)
    (if (i32.ge_u (local.get $width) (i32.const 8)) (then
      (v128.store (local.get $dst) (local.get $lo))
      (v128.store offset=16 (local.get $dst) (local.get $hi))
      (return)))
    (if (i32.gt_u (local.get $width) (i32.const 0)) (then (f32.store (local.get $dst) (f32x4.extract_lane 0 (local.get $lo)))))
    (if (i32.gt_u (local.get $width) (i32.const 1)) (then (f32.store offset=4 (local.get $dst) (f32x4.extract_lane 1 (local.get $lo)))))
    (if (i32.gt_u (local.get $width) (i32.const 2)) (then (f32.store offset=8 (local.get $dst) (f32x4.extract_lane 2 (local.get $lo)))))
    (if (i32.gt_u (local.get $width) (i32.const 3)) (then (f32.store offset=12 (local.get $dst) (f32x4.extract_lane 3 (local.get $lo)))))
    (if (i32.gt_u (local.get $width) (i32.const 4)) (then (f32.store offset=16 (local.get $dst) (f32x4.extract_lane 0 (local.get $hi)))))
    (if (i32.gt_u (local.get $width) (i32.const 5)) (then (f32.store offset=20 (local.get $dst) (f32x4.extract_lane 1 (local.get $hi)))))
    (if (i32.gt_u (local.get $width) (i32.const 6)) (then (f32.store offset=24 (local.get $dst) (f32x4.extract_lane 2 (local.get $hi))))))

  ;; One row of A times one panel: dst[0 .. width) = bias + Σ_k A[k]·panel[k], A[k] at a + k·kStride, summed over k
  ;; in order, as `gemm`'s 4-row blocks do, so a row's result does not depend on the block it falls in.
  (func $rowTimesPanel
    (param $a i32) (param $kStride i32) (param $p i32) (param $bias i32) (param $K i32) (param $dst i32)
    (param $width i32)
    (local $k i32) (local $s v128) (local $lo v128) (local $hi v128)
    (local.set $lo (v128.load (local.get $bias)))
    (local.set $hi (v128.load offset=16 (local.get $bias)))
    (local.set $k (local.get $K))
    (block $done (loop $next
      (br_if $done (i32.eqz (local.get $k)))
      (local.set $s (v128.load32_splat (local.get $a)))
      (local.set $lo (f32x4.relaxed_madd (local.get $s) (v128.load (local.get $p)) (local.get $lo)))
      (local.set $hi (f32x4.relaxed_madd (local.get $s) (v128.load offset=16 (local.get $p)) (local.get $hi)))
      (local.set $a (i32.add (local.get $a) (local.get $kStride)))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (local.set $k (i32.sub (local.get $k) (i32.const 1)))
      (br $next)))
    (call $storeRow (local.get $dst) (local.get $lo) (local.get $hi) (local.get $width)))

  ;; C (M × N, rows N floats apart) = A·B + bias with B packed by `pack` at bp. A[i][k] is at
  ;; a + i·rowStride + k·kStride. Rows go 4 at a time, and the last M mod 4 one at a time ($rowTimesPanel).
  (func (export "gemm")
    (param $a i32) (param $rowStride i32) (param $kStride i32) (param $bp i32) (param $c i32) (param $M i32)
    (param $K i32) (param $N i32)
    (local $n0 i32) (local $i i32) (local $k i32) (local $panel i32) (local $bias i32) (local $p i32) (local $width i32)
    (local $a0 i32) (local $a1 i32) (local $a2 i32) (local $a3 i32) (local $dst i32) (local $rowBytes i32)
    (local $b0 v128) (local $b1 v128) (local $s v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $rowBytes (i32.shl (local.get $N) (i32.const 2)))
    ;; the bias follows the panels: ceil(N/8) panels of K·32 bytes
    (local.set $bias (i32.add (local.get $bp)
      (i32.mul (i32.shr_u (i32.add (local.get $N) (i32.const 7)) (i32.const 3)) (i32.shl (local.get $K) (i32.const 5)))))
    (local.set $panel (local.get $bp))
    (block $panelsDone (loop $panelLoop
      (br_if $panelsDone (i32.ge_u (local.get $n0) (local.get $N)))
      (local.set $width (i32.sub (local.get $N) (local.get $n0)))
      (local.set $i (i32.const 0))
      (block $rowsDone (loop $rowLoop
        (br_if $rowsDone (i32.gt_u (i32.add (local.get $i) (i32.const 4)) (local.get $M)))
        (local.set $a0 (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $rowStride))))
        (local.set $a1 (i32.add (local.get $a0) (local.get $rowStride)))
        (local.set $a2 (i32.add (local.get $a1) (local.get $rowStride)))
        (local.set $a3 (i32.add (local.get $a2) (local.get $rowStride)))
        (local.set $c00 (v128.load (i32.add (local.get $bias) (i32.shl (local.get $n0) (i32.const 2)))))
        (local.set $c01 (v128.load offset=16 (i32.add (local.get $bias) (i32.shl (local.get $n0) (i32.const 2)))))
        (local.set $c10 (local.get $c00)) (local.set $c11 (local.get $c01))
        (local.set $c20 (local.get $c00)) (local.set $c21 (local.get $c01))
        (local.set $c30 (local.get $c00)) (local.set $c31 (local.get $c01))
        (local.set $p (local.get $panel))
        (local.set $k (local.get $K))
        (block $kDone (loop $kLoop
          (br_if $kDone (i32.eqz (local.get $k)))
          (local.set $b0 (v128.load (local.get $p)))
          (local.set $b1 (v128.load offset=16 (local.get $p)))
          (local.set $s (v128.load32_splat (local.get $a0)))
          (local.set $c00 (f32x4.relaxed_madd (local.get $s) (local.get $b0) (local.get $c00)))
          (local.set $c01 (f32x4.relaxed_madd (local.get $s) (local.get $b1) (local.get $c01)))
          (local.set $s (v128.load32_splat (local.get $a1)))
          (local.set $c10 (f32x4.relaxed_madd (local.get $s) (local.get $b0) (local.get $c10)))
          (local.set $c11 (f32x4.relaxed_madd (local.get $s) (local.get $b1) (local.get $c11)))
          (local.set $s (v128.load32_splat (local.get $a2)))
          (local.set $c20 (f32x4.relaxed_madd (local.get $s) (local.get $b0) (local.get $c20)))
          (local.set $c21 (f32x4.relaxed_madd (local.get $s) (local.get $b1) (local.get $c21)))
          (local.set $s (v128.load32_splat (local.get $a3)))
          (local.set $c30 (f32x4.relaxed_madd (local.get $s) (local.get $b0) (local.get $c30)))
          (local.set $c31 (f32x4.relaxed_madd (local.get $s) (local.get $b1) (local.get $c31)))
          (local.set $a0 (i32.add (local.get $a0) (local.get $kStride)))
          (local.set $a1 (i32.add (local.get $a1) (local.get $kStride)))
          (local.set $a2 (i32.add (local.get $a2) (local.get $kStride)))
          (local.set $a3 (i32.add (local.get $a3) (local.get $kStride)))
          (local.set $p (i32.add (local.get $p) (i32.const 32)))
          (local.set $k (i32.sub (local.get $k) (i32.const 1)))
          (br $kLoop)))
        (local.set $dst (i32.add (i32.add (local.get $c) (i32.mul (local.get $i) (local.get $rowBytes)))
          (i32.shl (local.get $n0) (i32.const 2))))
        (call $storeRow (local.get $dst) (local.get $c00) (local.get $c01) (local.get $width))
        (local.set $dst (i32.add (local.get $dst) (local.get $rowBytes)))
        (call $storeRow (local.get $dst) (local.get $c10) (local.get $c11) (local.get $width))
        (local.set $dst (i32.add (local.get $dst) (local.get $rowBytes)))
        (call $storeRow (local.get $dst) (local.get $c20) (local.get $c21) (local.get $width))
        (local.set $dst (i32.add (local.get $dst) (local.get $rowBytes)))
        (call $storeRow (local.get $dst) (local.get $c30) (local.get $c31) (local.get $width))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $rowLoop)))
      ;; the last M mod 4 rows
      (block $restDone (loop $rest
        (br_if $restDone (i32.ge_u (local.get $i) (local.get $M)))
        (call $rowTimesPanel (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $rowStride))) (local.get $kStride)
          (local.get $panel) (i32.add (local.get $bias) (i32.shl (local.get $n0) (i32.const 2))) (local.get $K)
          (i32.add (i32.add (local.get $c) (i32.mul (local.get $i) (local.get $rowBytes))) (i32.shl (local.get $n0) (i32.const 2)))
          (local.get $width))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rest)))
      (local.set $panel (i32.add (local.get $panel) (i32.shl (local.get $K) (i32.const 5))))
      (local.set $n0 (i32.add (local.get $n0) (i32.const 8)))
      (br $panelLoop))))
)
