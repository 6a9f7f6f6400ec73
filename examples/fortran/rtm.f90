!> mlbs from Fortran: the snapshot pattern of reverse time migration.
!> A forward loop propagates a 3-D wavefield and saves a snapshot every few
!> steps through mlbs; the backward loop reads them newest first and
!> correlates each with a second field into an image. The tiers: 4 MiB of
!> DRAM, a 16 MiB "fast" folder and an unlimited "slow" one under the folder
!> given on the command line (default /tmp/mlbs-fortran-rtm), so the 32 MiB
!> of snapshots spill through all three. Build: examples/ with CMake
!> (mlbs_fortran_rtm), or against an installed mlbs (docs/fortran.md).
program rtm
  use, intrinsic :: iso_c_binding
  use mlbs
  implicit none

  integer, parameter :: n = 64, steps = 64, every = 2      ! 32 snapshots of 1 MiB
  integer(c_size_t), parameter :: bytes = int(n, c_size_t)**3 * 4
  character(len=4096) :: dir
  character(len=512) :: msg
  type(mlbs_runtime) :: rt
  type(mlbs_store) :: snaps
  real(c_float), pointer :: snap(:,:,:)
  real(c_float), allocatable :: u(:,:,:), v(:,:,:), image(:,:,:)
  integer :: step, stat
  integer(c_int64_t) :: id

  call get_command_argument(1, dir)
  if (len_trim(dir) == 0) dir = "/tmp/mlbs-fortran-rtm"
  call execute_command_line("mkdir -p " // trim(dir) // "/fast " // trim(dir) // "/slow")

  call mlbs_open(rt, stat, tiers="mem:4MiB,dir:" // trim(dir) // "/fast:16MiB,dir:" // trim(dir) // "/slow", &
                 schedule="lifo", errmsg=msg)
  if (stat /= 0) call give_up("mlbs_open")
  call mlbs_store_open(snaps, rt, "wavefield", bytes, stat, msg)
  if (stat /= 0) call give_up("mlbs_store_open")

  allocate(u(n, n, n), v(n, n, n), image(n, n, n))
  u = 0
  u(n / 2, n / 2, n / 2) = 1                                 ! the source
  do step = 1, steps                                         ! forward: save every `every` steps
    call propagate(u)
    if (mod(step, every) == 0) then
      call mlbs_buffer(snaps, snap, [n, n, n], stat, msg)
      if (stat /= 0) call give_up("mlbs_buffer")
      snap = u
      call mlbs_write(snaps, int(step / every, c_int64_t), stat, msg)   ! returns at copy speed
      if (stat /= 0) call give_up("mlbs_write")
    end if
  end do

  v = u
  image = 0
  do id = steps / every, 1, -1                               ! backward: newest snapshot first
    call propagate(v)
    call mlbs_read(snaps, id, stat, msg)                     ! usually prefetched already
    if (stat /= 0) call give_up("mlbs_read")
    call mlbs_buffer(snaps, snap, [n, n, n], stat, msg)      ! (a read may move the buffer)
    image = image + snap * v
  end do
  print '(a,i0,a,es12.5)', "image of ", steps / every, " snapshots: sum ", sum(real(image, c_double))

  call mlbs_store_close(snaps, stat)
  call mlbs_close(rt, stat)
  deallocate(u, v, image)

contains

  !> One step of a 7-point smoothing stencil, a stand-in for the wave equation.
  subroutine propagate(f)
    real(c_float), intent(inout) :: f(:,:,:)
    f(2:n-1, 2:n-1, 2:n-1) = 0.4 * f(2:n-1, 2:n-1, 2:n-1) + 0.1 * &
        (f(1:n-2, 2:n-1, 2:n-1) + f(3:n, 2:n-1, 2:n-1) + f(2:n-1, 1:n-2, 2:n-1) + &
         f(2:n-1, 3:n, 2:n-1) + f(2:n-1, 2:n-1, 1:n-2) + f(2:n-1, 2:n-1, 3:n))
  end subroutine propagate

  subroutine give_up(what)
    character(len=*), intent(in) :: what
    print '(a,a,a)', what, " failed: ", trim(msg)
    stop 1
  end subroutine give_up

end program rtm
