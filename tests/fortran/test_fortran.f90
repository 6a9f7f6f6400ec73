!> Tests of the Fortran module `mlbs` (fortran/mlbs.f90), run by ctest as
!> `mlbs_fortran_test DIR`: records through three tiers (DRAM for 4 records, a
!> fast directory for 4, an unlimited slow one under DIR), read back last-in
!> first-out through a rank-3 array pointer and checked element by element;
!> contains, erase, ids; a persistent store recovered by a second runtime; and
!> failures that give a status and a message while the program goes on.
!> Prints one line per failed check and a summary; exits non-zero on failure.
program test_fortran
  use, intrinsic :: iso_c_binding
  use mlbs
  implicit none

  integer, parameter :: n = 16                       ! 16^3 floats = 16 KiB records
  integer(c_size_t), parameter :: bytes = int(n, c_size_t)**3 * 4
  integer(c_int64_t), parameter :: records = 12
  character(len=4096) :: dir
  character(len=:), allocatable :: spec, pspec
  type(mlbs_runtime) :: rt
  type(mlbs_store) :: u
  real(c_float), pointer :: w(:,:,:)
  real(c_float), pointer :: big(:)
  integer(c_int64_t), allocatable :: ids(:)
  integer(c_int64_t) :: id
  integer :: stat, passed = 0, failed = 0
  character(len=512) :: msg
  logical :: ok

  call get_command_argument(1, dir)
  if (len_trim(dir) == 0) then
    print '(a)', "usage: mlbs_fortran_test DIR"
    error stop 2
  end if
  ! (the persistent store's folder starts empty: its records are this run's)
  call execute_command_line("rm -rf " // trim(dir) // "/p")
  call execute_command_line("mkdir -p " // trim(dir) // "/fast " // trim(dir) // "/slow " // trim(dir) // "/p")
  spec = "mem:64KiB,dir:" // trim(dir) // "/fast:64KiB,dir:" // trim(dir) // "/slow"
  pspec = "mem:64KiB,dir:" // trim(dir) // "/p"

  ! --- three tiers, LIFO --------------------------------------------------------
  call mlbs_open(rt, stat, tiers=spec, schedule="lifo", errmsg=msg)
  call check(stat == 0, "mlbs_open: " // trim(msg))
  call mlbs_store_open(u, rt, "wavefield", bytes, stat, msg)
  call check(stat == 0, "mlbs_store_open: " // trim(msg))
  call mlbs_buffer(u, w, [n, n, n], stat, msg)
  call check(stat == 0 .and. associated(w), "mlbs_buffer: " // trim(msg))
  call check(all(w == 0.0), "a new working buffer is zeroed")
  do id = 0, records - 1
    call fill(w, id)
    call mlbs_write(u, id, stat, msg)
    call check(stat == 0, "mlbs_write: " // trim(msg))
    w = -1.0  ! the buffer is ours again once write returns
  end do
  ! contains and erase (before the reads: a record read for the last time
  ! under a known schedule is released)
  id = 1000
  call mlbs_write(u, id, stat)
  ok = mlbs_contains(u, id, stat)
  call check(ok .and. stat == 0, "contains(1000) after its write")
  call mlbs_erase(u, id, stat)
  ok = mlbs_contains(u, id, stat)
  call check(stat == 0 .and. .not. ok, "an erased record is gone")
  call mlbs_ids(u, ids, stat)
  call check(stat == 0 .and. size(ids) == records, "mlbs_ids lists every record")
  if (size(ids) == records) call check(all(ids == [(id, id = 0, records - 1)]), "mlbs_ids ascending")
  call mlbs_flush(u, stat)
  call check(stat == 0, "mlbs_flush")
  do id = records - 1, 0, -1
    call mlbs_read(u, id, stat, msg)
    call check(stat == 0, "mlbs_read: " // trim(msg))
    call mlbs_buffer(u, w, [n, n, n], stat)  ! a read may move the buffer
    ok = stat == 0
    if (ok) ok = holds(w, id)
    call check(ok, "record read back exactly")
  end do

  ! failures: a status and the message, and the program goes on
  msg = ""
  call mlbs_read(u, 999_c_int64_t, stat, msg)
  call check(stat /= 0 .and. index(msg, "999") > 0, "reading an unknown id fails with its id in the message")
  call check(len(mlbs_last_error()) > 0, "mlbs_last_error has the message")
  msg = ""
  call mlbs_buffer(u, big, [int(bytes) + 1], stat, msg)
  call check(stat == 22 .and. .not. associated(big) .and. index(msg, "working buffer") > 0, &
             "a shape larger than the working buffer is refused")
  call mlbs_resize(u, bytes * 2, stat)
  call mlbs_buffer(u, big, [int(bytes) / 2], stat)
  call check(stat == 0 .and. size(big) == int(bytes) / 2, "after mlbs_resize a larger shape fits")

  call mlbs_store_close(u, stat)
  call check(stat == 0, "mlbs_store_close")
  call mlbs_close(rt, stat)
  call check(stat == 0, "mlbs_close")

  msg = ""
  call mlbs_open(rt, stat, tiers="mem:64KiB,bogus:/x", errmsg=msg)
  call check(stat /= 0 .and. len_trim(msg) > 0, "a wrong tier spec fails with a message: " // trim(msg))

  ! --- a store with its own codec (lz4 here; a build without it says so) -------
  call mlbs_open(rt, stat, tiers=spec, schedule="lifo", errmsg=msg)
  msg = ""
  call mlbs_store_open(u, rt, "packed", bytes, stat, msg, codec="lz4", elements=MLBS_REAL4)
  call check(stat == 0 .or. index(msg, "lz4") > 0, "mlbs_store_open with a codec: " // trim(msg))
  if (stat == 0) then
    call check(round_trips(u, 200_c_int64_t), "records of a store with its own codec read back exactly")
    call mlbs_store_close(u, stat)
  end if
  ! --- a store whose records are kept in parts ------------------------------------
  call mlbs_store_open(u, rt, "in-parts", bytes, stat, msg, parts=4)
  call check(stat == 0, "mlbs_store_open in parts: " // trim(msg))
  call check(round_trips(u, 300_c_int64_t), "records kept in parts read back exactly")
  call mlbs_store_close(u, stat)
  call mlbs_store_open(u, rt, "auto-parts", bytes, stat, msg, parts=MLBS_PARTS_AUTO)
  call check(stat == 0, "mlbs_store_open with MLBS_PARTS_AUTO: " // trim(msg))
  call check(round_trips(u, 400_c_int64_t), "records in the parts the store chose read back exactly")
  call mlbs_store_close(u, stat)
  msg = ""
  call mlbs_store_open(u, rt, "bad-codec", bytes, stat, msg, codec="zstd:99")
  call check(stat == 22 .and. index(msg, "bad-codec") > 0, "a bad codec names the store: " // trim(msg))
  call mlbs_close(rt, stat)

  ! --- a persistent store outlives its runtime ----------------------------------
  call mlbs_open(rt, stat, tiers=pspec, durability=MLBS_PERSISTENT, errmsg=msg)
  call check(stat == 0, "persistent mlbs_open: " // trim(msg))
  call mlbs_store_open(u, rt, "checkpoint", bytes, stat)
  call mlbs_buffer(u, w, [n, n, n], stat)
  do id = 0, 2
    call fill(w, 100 + id)
    call mlbs_write(u, id, stat)
  end do
  call mlbs_flush(u, stat)
  call mlbs_store_close(u, stat)
  call mlbs_close(rt, stat)
  call mlbs_open(rt, stat, tiers=pspec, durability=MLBS_PERSISTENT)
  call mlbs_store_open(u, rt, "checkpoint", bytes, stat)
  call mlbs_ids(u, ids, stat)
  call check(stat == 0 .and. size(ids) == 3, "a second runtime recovers the persistent records")
  do id = 0, 2
    call mlbs_read(u, id, stat)
    call mlbs_buffer(u, w, [n, n, n], stat)
    ok = stat == 0
    if (ok) ok = holds(w, 100 + id)
    call check(ok, "recovered record exact")
  end do
  call mlbs_store_close(u, stat)
  call mlbs_close(rt, stat)

  print '(i0,a,i0,a)', passed, " passed, ", failed, " failed"
  if (failed > 0) error stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) then
      passed = passed + 1
    else
      failed = failed + 1
      print '(a,a)', "FAIL: ", what
    end if
  end subroutine check

  ! Exact in float: id * 65536 + i < 2^24 for id < 256.
  subroutine fill(a, rec)
    real(c_float), intent(out) :: a(:,:,:)
    integer(c_int64_t), intent(in) :: rec
    integer :: i, j, k
    do k = 1, n
      do j = 1, n
        do i = 1, n
          a(i, j, k) = real(rec * 65536 + (i - 1) + n * ((j - 1) + n * (k - 1)), c_float)
        end do
      end do
    end do
  end subroutine fill

  !> Writes `records` records (values from `base` on) and reads them back newest first: all exact?
  logical function round_trips(store, base)
    type(mlbs_store), intent(inout) :: store
    integer(c_int64_t), intent(in) :: base
    real(c_float), pointer :: a(:,:,:)
    integer(c_int64_t) :: rec
    integer :: st
    call mlbs_buffer(store, a, [n, n, n], st)
    do rec = 0, records - 1
      call fill(a, base + rec)
      call mlbs_write(store, rec, st)
    end do
    round_trips = .true.
    do rec = records - 1, 0, -1
      call mlbs_read(store, rec, st)
      call mlbs_buffer(store, a, [n, n, n], st)
      round_trips = round_trips .and. st == 0
      if (round_trips) round_trips = holds(a, base + rec)
    end do
  end function round_trips

  logical function holds(a, rec)
    real(c_float), intent(in) :: a(:,:,:)
    integer(c_int64_t), intent(in) :: rec
    integer :: i, j, k
    holds = .true.
    do k = 1, n
      do j = 1, n
        do i = 1, n
          if (a(i, j, k) /= real(rec * 65536 + (i - 1) + n * ((j - 1) + n * (k - 1)), c_float)) holds = .false.
        end do
      end do
    end do
  end function holds

end program test_fortran
