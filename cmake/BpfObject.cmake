# bpf_object(NAME SRC): compile SRC into NAME.bpf.o with clang (-target bpf,
# CO-RE, -g -O2; -Wall -Wextra as user space, warnings are errors; unused
# parameters allowed: a BPF_PROG() need not use every tracepoint argument) and
# generate NAME.skel.h with bpftool. Exposes the INTERFACE target NAME_skel
# (skeleton struct NAME_bpf): link it to get the skeleton header on the include
# path and libbpf linked in.
find_program(BPF_CLANG NAMES clang clang-14 clang-15 clang-16 clang-19 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
set(BPF_ARCH x86)

#
# bpf_object(NAME SRC [DEPS...] [MCPU v2|v3] [DEFINES D...]): DEPS are files
# the object depends on; MCPU is clang's BPF instruction set (default v3);
# DEFINES are -D flags without the -D.
function(bpf_object name src)
	cmake_parse_arguments(B "" "MCPU" "DEFINES" ${ARGN})
	if(NOT B_MCPU)
		set(B_MCPU v3)
	endif()
	list(TRANSFORM B_DEFINES PREPEND -D)
	set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
	set(skel ${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h)
	add_custom_command(OUTPUT ${obj}
		COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=${B_MCPU} -D__TARGET_ARCH_${BPF_ARCH} ${B_DEFINES}
			-Wall -Wextra -Werror -Wno-unused-function -Wno-unused-parameter
			-I${PROJECT_SOURCE_DIR}/vmlinux/${BPF_ARCH} -I${PROJECT_SOURCE_DIR}/include
			-I${PROJECT_SOURCE_DIR}/bpf ${LIBBPF_CFLAGS_OTHER}
			-c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
		DEPENDS ${src} ${B_UNPARSED_ARGUMENTS}
		IMPLICIT_DEPENDS C ${CMAKE_CURRENT_SOURCE_DIR}/${src}
		COMMENT "BPF ${src}")
	add_custom_command(OUTPUT ${skel}
		COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}.tmp
		COMMAND ${CMAKE_COMMAND} -E rename ${skel}.tmp ${skel}
		DEPENDS ${obj}
		COMMENT "skeleton ${name}.skel.h")
	add_custom_target(${name}_skel_gen DEPENDS ${skel})
	add_library(${name}_skel INTERFACE)
	add_dependencies(${name}_skel ${name}_skel_gen)
	target_include_directories(${name}_skel INTERFACE ${CMAKE_CURRENT_BINARY_DIR})
	target_link_libraries(${name}_skel INTERFACE ${LIBBPF_LINK_LIBRARIES})
endfunction()
