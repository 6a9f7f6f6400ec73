!> mlbs — Fortran bindings (module `mlbs`) over the C API of include/mlbs/mlbs.h,
!> through ISO_C_BINDING. Every call takes `stat` (0, or the positive errno of
!> the failure) and an optional `errmsg` that receives the message: a failure
!> never stops the program. docs/fortran.md.
module mlbs
  use, intrinsic :: iso_c_binding
  implicit none
  private

  !> Durability of a runtime's stores (docs/semantics.md).
  integer, parameter, public :: MLBS_SCRATCH = 0, MLBS_PERSISTENT = 1
  !> What a store's records hold, for its codec (ZFP codes reals only): mlbs_store_open's `elements`.
  integer, parameter, public :: MLBS_BYTES = 0, MLBS_REAL4 = 1, MLBS_REAL8 = 2
  !> mlbs_store_open(..., parts=MLBS_PARTS_AUTO): the store chooses (C's MLBS_PARTS_AUTO, all bits set)
  integer, parameter, public :: MLBS_PARTS_AUTO = -1

  !> mlbs_store_options_t of include/mlbs/mlbs.h.
  type, bind(C) :: c_store_options
    type(c_ptr) :: codec
    integer(c_int) :: elements
    integer(c_int32_t) :: plane_nx, plane_ny
    integer(c_int32_t) :: parts
  end type c_store_options

  !> A runtime: tiers, catalog and helper threads (mlbs::Runtime).
  type, public :: mlbs_runtime
    type(c_ptr) :: handle = c_null_ptr
  end type mlbs_runtime

  !> A store: a named series of records with a working buffer (mlbs::Store).
  type, public :: mlbs_store
    type(c_ptr) :: handle = c_null_ptr
  end type mlbs_store

  public :: mlbs_open, mlbs_open_file, mlbs_close
  public :: mlbs_store_open, mlbs_store_close, mlbs_buffer, mlbs_size, mlbs_resize
  public :: mlbs_write, mlbs_read, mlbs_erase, mlbs_contains, mlbs_flush, mlbs_ids
  public :: mlbs_last_error

  !> The working buffer as an array pointer of the caller's type and shape:
  !> real(c_float|c_double), integer(c_int32_t|c_int64_t), ranks 1 to 3. The
  !> shape must fit the store's size; a read may move the buffer, so take the
  !> pointer again after each mlbs_read (and mlbs_resize).
  interface mlbs_buffer
    module procedure buffer_r4_1, buffer_r4_2, buffer_r4_3, &
                     buffer_r8_1, buffer_r8_2, buffer_r8_3, &
                     buffer_i4_1, buffer_i4_2, buffer_i4_3, &
                     buffer_i8_1, buffer_i8_2, buffer_i8_3
  end interface mlbs_buffer

  interface
    integer(c_int) function c_runtime_create(tiers, schedule, durability, out) &
        bind(C, name="mlbs_runtime_create")
      import :: c_int, c_ptr
      type(c_ptr), value :: tiers, schedule
      integer(c_int), value :: durability
      type(c_ptr), intent(out) :: out
    end function c_runtime_create
    integer(c_int) function c_runtime_create_from_file(path, out) bind(C, name="mlbs_runtime_create_from_file")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), intent(out) :: out
    end function c_runtime_create_from_file
    integer(c_int) function c_runtime_destroy(rt) bind(C, name="mlbs_runtime_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: rt
    end function c_runtime_destroy
    integer(c_int) function c_store_create(rt, name, bytes, out) bind(C, name="mlbs_store_create")
      import :: c_int, c_char, c_ptr, c_size_t
      type(c_ptr), value :: rt
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: out
    end function c_store_create
    integer(c_int) function c_store_create_with(rt, name, bytes, options, out) bind(C, name="mlbs_store_create_with")
      import :: c_int, c_char, c_ptr, c_size_t, c_store_options
      type(c_ptr), value :: rt
      character(kind=c_char), intent(in) :: name(*)
      integer(c_size_t), value :: bytes
      type(c_store_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
    end function c_store_create_with
    integer(c_int) function c_store_destroy(s) bind(C, name="mlbs_store_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
    end function c_store_destroy
    type(c_ptr) function c_store_data(s) bind(C, name="mlbs_store_data")
      import :: c_ptr
      type(c_ptr), value :: s
    end function c_store_data
    integer(c_size_t) function c_store_size(s) bind(C, name="mlbs_store_size")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function c_store_size
    integer(c_int) function c_store_resize(s, bytes) bind(C, name="mlbs_store_resize")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t), value :: bytes
    end function c_store_resize
    integer(c_int) function c_store_write(s, id) bind(C, name="mlbs_store_write")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t), value :: id
    end function c_store_write
    integer(c_int) function c_store_read(s, id) bind(C, name="mlbs_store_read")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t), value :: id
    end function c_store_read
    integer(c_int) function c_store_contains(s, id) bind(C, name="mlbs_store_contains")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t), value :: id
    end function c_store_contains
    integer(c_int) function c_store_erase(s, id) bind(C, name="mlbs_store_erase")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t), value :: id
    end function c_store_erase
    integer(c_int) function c_store_ids(s, ids, cap, count) bind(C, name="mlbs_store_ids")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s, ids
      integer(c_size_t), value :: cap
      integer(c_size_t), intent(out) :: count
    end function c_store_ids
    integer(c_int) function c_store_flush(s) bind(C, name="mlbs_store_flush")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
    end function c_store_flush
    type(c_ptr) function c_last_error() bind(C, name="mlbs_last_error")
      import :: c_ptr
    end function c_last_error
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function c_strlen
  end interface

contains

  !> A runtime from a tier spec ("mem:2GiB,dir:/nvme:64GiB,dir:/pfs"), a
  !> schedule ("lifo", "fifo", "lifo:N", "fifo:N", "unknown" or "3,1,2") and a durability
  !> (MLBS_SCRATCH or MLBS_PERSISTENT); absent arguments keep the defaults.
  subroutine mlbs_open(rt, stat, tiers, schedule, durability, errmsg)
    type(mlbs_runtime), intent(out) :: rt
    integer, intent(out) :: stat
    character(len=*), intent(in), optional :: tiers, schedule
    integer, intent(in), optional :: durability
    character(len=*), intent(inout), optional :: errmsg
    character(kind=c_char), allocatable, target :: ctiers(:), cschedule(:)
    type(c_ptr) :: t, s
    integer(c_int) :: d
    t = c_null_ptr
    s = c_null_ptr
    d = MLBS_SCRATCH
    if (present(tiers)) then
      ctiers = c_string(tiers)
      t = c_loc(ctiers)
    end if
    if (present(schedule)) then
      cschedule = c_string(schedule)
      s = c_loc(cschedule)
    end if
    if (present(durability)) d = int(durability, c_int)
    call done(c_runtime_create(t, s, d, rt%handle), stat, errmsg)
  end subroutine mlbs_open

  !> A runtime from a TOML configuration file (docs/configuration.md).
  subroutine mlbs_open_file(rt, path, stat, errmsg)
    type(mlbs_runtime), intent(out) :: rt
    character(len=*), intent(in) :: path
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_runtime_create_from_file(c_string(path), rt%handle), stat, errmsg)
  end subroutine mlbs_open_file

  !> Ends the runtime (its stores must be closed first): drains what scratch
  !> stores hold, and persistent ones are durable. A closed runtime is null.
  subroutine mlbs_close(rt, stat, errmsg)
    type(mlbs_runtime), intent(inout) :: rt
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_runtime_destroy(rt%handle), stat, errmsg)
    if (stat == 0) rt%handle = c_null_ptr
  end subroutine mlbs_close

  !> Opens store `name` with a working buffer of `bytes` zeroed bytes (a
  !> persistent store recovers its records). `codec`: the store's own
  !> ("zstd:3", "zfp:precision=20", "none" ...) instead of the runtime's;
  !> `elements`: MLBS_REAL4 or MLBS_REAL8 when its records are reals (ZFP
  !> codes nothing else), MLBS_BYTES by default; `parts`: each record kept
  !> as that many parts (docs/parts.md), 1 by default, or MLBS_PARTS_AUTO:
  !> the store chooses from `bytes` and the DRAM budget.
  subroutine mlbs_store_open(store, rt, name, bytes, stat, errmsg, codec, elements, parts)
    type(mlbs_store), intent(out) :: store
    type(mlbs_runtime), intent(in) :: rt
    character(len=*), intent(in) :: name
    integer(c_size_t), intent(in) :: bytes
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=*), intent(in), optional :: codec
    integer, intent(in), optional :: elements
    integer, intent(in), optional :: parts
    type(c_store_options) :: options
    character(kind=c_char), allocatable, target :: c_codec(:)
    if (.not. present(codec) .and. .not. present(elements) .and. .not. present(parts)) then
      call done(c_store_create(rt%handle, c_string(name), bytes, store%handle), stat, errmsg)
      return
    end if
    options%codec = c_null_ptr
    options%elements = MLBS_BYTES
    options%plane_nx = 0
    options%plane_ny = 0
    options%parts = 0
    if (present(parts)) options%parts = int(parts, c_int32_t)
    if (present(codec)) then
      c_codec = c_string(codec)
      options%codec = c_loc(c_codec)
    end if
    if (present(elements)) options%elements = int(elements, c_int)
    call done(c_store_create_with(rt%handle, c_string(name), bytes, options, store%handle), stat, errmsg)
  end subroutine mlbs_store_open

  subroutine mlbs_store_close(store, stat, errmsg)
    type(mlbs_store), intent(inout) :: store
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_destroy(store%handle), stat, errmsg)
    if (stat == 0) store%handle = c_null_ptr
  end subroutine mlbs_store_close

  !> Bytes in the working buffer (the last record read, or as opened/resized).
  integer(c_size_t) function mlbs_size(store)
    type(mlbs_store), intent(in) :: store
    mlbs_size = c_store_size(store%handle)
  end function mlbs_size

  subroutine mlbs_resize(store, bytes, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_size_t), intent(in) :: bytes
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_resize(store%handle, bytes), stat, errmsg)
  end subroutine mlbs_resize

  !> Records the working buffer as record `id`; the buffer is the caller's
  !> again when this returns.
  subroutine mlbs_write(store, id, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), intent(in) :: id
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_write(store%handle, id), stat, errmsg)
  end subroutine mlbs_write

  !> Makes record `id` the working buffer (take mlbs_buffer's pointer again).
  subroutine mlbs_read(store, id, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), intent(in) :: id
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_read(store%handle, id), stat, errmsg)
  end subroutine mlbs_read

  subroutine mlbs_erase(store, id, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), intent(in) :: id
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_erase(store%handle, id), stat, errmsg)
  end subroutine mlbs_erase

  !> .true. when the store holds record `id`.
  logical function mlbs_contains(store, id, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), intent(in) :: id
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int) :: rc
    rc = c_store_contains(store%handle, id)
    mlbs_contains = rc == 1
    call done(min(rc, 0_c_int), stat, errmsg)
  end function mlbs_contains

  !> Returns once what was written is where the durability asks (scratch:
  !> written behind; persistent: durable on the last tier).
  subroutine mlbs_flush(store, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    call done(c_store_flush(store%handle), stat, errmsg)
  end subroutine mlbs_flush

  !> The ids the store holds, ascending.
  subroutine mlbs_ids(store, ids, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), allocatable, target, intent(out) :: ids(:)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_size_t) :: count, got
    allocate(ids(0))
    call done(c_store_ids(store%handle, c_null_ptr, 0_c_size_t, count), stat, errmsg)
    do while (stat == 0 .and. count > size(ids, kind=c_size_t))
      deallocate(ids)
      allocate(ids(count))
      call done(c_store_ids(store%handle, c_loc(ids), count, got), stat, errmsg)
      count = got  ! ids written meanwhile by another thread: ask again
    end do
    if (stat == 0 .and. count < size(ids, kind=c_size_t)) ids = ids(1:count)
  end subroutine mlbs_ids

  !> The message of the last failed call on this thread ("" if none).
  function mlbs_last_error() result(msg)
    character(len=:), allocatable :: msg
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    p = c_last_error()
    n = 0
    if (c_associated(p)) n = c_strlen(p)
    allocate(character(len=n) :: msg)
    if (n == 0) return
    call c_f_pointer(p, chars, [n])
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function mlbs_last_error

  ! --- the mlbs_buffer specifics: one per type and rank ---------------------

  subroutine buffer_r4_1(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_float), pointer, intent(out) :: ptr(:)
    integer, intent(in) :: shape(1)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_float), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r4_1

  subroutine buffer_r4_2(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_float), pointer, intent(out) :: ptr(:,:)
    integer, intent(in) :: shape(2)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_float), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r4_2

  subroutine buffer_r4_3(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_float), pointer, intent(out) :: ptr(:,:,:)
    integer, intent(in) :: shape(3)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_float), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r4_3

  subroutine buffer_r8_1(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_double), pointer, intent(out) :: ptr(:)
    integer, intent(in) :: shape(1)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_double), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r8_1

  subroutine buffer_r8_2(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_double), pointer, intent(out) :: ptr(:,:)
    integer, intent(in) :: shape(2)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_double), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r8_2

  subroutine buffer_r8_3(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    real(c_double), pointer, intent(out) :: ptr(:,:,:)
    integer, intent(in) :: shape(3)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0.0_c_double), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_r8_3

  subroutine buffer_i4_1(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int32_t), pointer, intent(out) :: ptr(:)
    integer, intent(in) :: shape(1)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int32_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i4_1

  subroutine buffer_i4_2(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int32_t), pointer, intent(out) :: ptr(:,:)
    integer, intent(in) :: shape(2)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int32_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i4_2

  subroutine buffer_i4_3(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int32_t), pointer, intent(out) :: ptr(:,:,:)
    integer, intent(in) :: shape(3)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int32_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i4_3

  subroutine buffer_i8_1(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), pointer, intent(out) :: ptr(:)
    integer, intent(in) :: shape(1)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int64_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i8_1

  subroutine buffer_i8_2(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), pointer, intent(out) :: ptr(:,:)
    integer, intent(in) :: shape(2)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int64_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i8_2

  subroutine buffer_i8_3(store, ptr, shape, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer(c_int64_t), pointer, intent(out) :: ptr(:,:,:)
    integer, intent(in) :: shape(3)
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    nullify(ptr)
    call check_fit(store, shape, c_sizeof(0_c_int64_t), stat, errmsg)
    if (stat == 0) call c_f_pointer(c_store_data(store%handle), ptr, shape)
  end subroutine buffer_i8_3

  ! --- helpers ----------------------------------------------------------------

  !> A Fortran string as a NUL-terminated C one (trailing blanks dropped).
  function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char), allocatable :: c(:)
    integer :: i, n
    n = len_trim(s)
    allocate(c(n + 1))
    do i = 1, n
      c(i) = s(i:i)
    end do
    c(n + 1) = c_null_char
  end function c_string

  !> stat from a C return code (0 or -errno), the message into errmsg.
  subroutine done(rc, stat, errmsg)
    integer(c_int), intent(in) :: rc
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    stat = int(-min(rc, 0_c_int))
    if (stat /= 0 .and. present(errmsg)) errmsg = mlbs_last_error()
  end subroutine done

  !> stat EINVAL (22) with a message when `shape` of `elem_bytes` elements
  !> does not fit the store's working buffer.
  subroutine check_fit(store, shape, elem_bytes, stat, errmsg)
    type(mlbs_store), intent(in) :: store
    integer, intent(in) :: shape(:)
    integer(c_size_t), intent(in) :: elem_bytes
    integer, intent(out) :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_size_t) :: want, have
    character(len=160) :: msg
    stat = 0
    if (.not. c_associated(store%handle)) then
      stat = 22
      if (present(errmsg)) errmsg = "mlbs_buffer: the store is not open"
      return
    end if
    want = product(int(shape, c_size_t)) * elem_bytes
    have = c_store_size(store%handle)
    if (any(shape < 0) .or. want > have) then
      stat = 22
      write (msg, '(a,i0,a,i0,a)') "mlbs_buffer: the shape asks for ", want, " bytes, the working buffer holds ", &
          have, " (mlbs_resize first)"
      if (present(errmsg)) errmsg = trim(msg)
    end if
  end subroutine check_fit

end module mlbs
