/* SPDX-License-Identifier: MIT */
/*
 * Prints one CPython version's struct offsets as a C initializer of
 * struct py_offsets.  Compiled by scripts/gen-offsets against that
 * version's own headers, with Py_BUILD_CORE so internal structs are
 * visible; never run against the target.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x03080000
#include <internal/pycore_pystate.h>
#endif
#if PY_VERSION_HEX >= 0x03070000 && PY_VERSION_HEX < 0x03080000
#include <internal/pystate.h>
#endif
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_code.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_object.h>
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#include <opcode.h>
#endif
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 moved _PyInterpreterFrame and FRAME_SPECIALS_SIZE here. */
#include <internal/pycore_interpframe.h>
/* _PY_EVAL_PLEASE_STOP_BIT, for PEP 768 remote execution. */
#include <internal/pycore_ceval.h>
#endif

#define NONE (-1L)
#define OFF(type, field) ((long)offsetof(type, field))

#define DEBUG_FIELD(ours, theirs)                                              \
	printf("\t{ offsetof(struct py_offsets, %s), %ld, \"%s\" },\n",      \
	       #ours, OFF(_Py_DebugOffsets, theirs), #theirs)

static void field(const char *name, long value)
{
	printf("\t.%s = %ld,\n", name, value);
}

/* Bit position of a bit-field inside PyASCIIObject.state. */
#define STATE_SHIFT(bitfield)                                                  \
	({                                                                     \
		PyASCIIObject o;                                               \
		unsigned int word = 0;                                         \
		int shift = 0;                                                 \
		memset(&o, 0, sizeof(o));                                      \
		o.state.bitfield = 1;                                          \
		memcpy(&word, &o.state, sizeof(word));                         \
		while (shift < 32 && !(word & (1u << shift)))                  \
			shift++;                                               \
		(long)shift;                                                   \
	})

#if PY_VERSION_HEX < 0x030B0000
/*
 * Up to 3.10 the dict keys struct is not in the installed headers:
 * scripts/dict-layout.py measures it in a live dict and gives
 * "field value" lines on stdin.  Print each one the table needs.
 */
static int measured_fields(void)
{
	static const char *const need[] = {
	    "dictkeys_size",  "dictkeys_nentries", "dictkeys_indices",
	    "dictentry_size", "dictentry_key",	   "dictentry_value"};
	long got[sizeof(need) / sizeof(need[0])];
	char name[64];
	long value;
	size_t i;

	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		got[i] = NONE;
	while (scanf("%63s %ld", name, &value) == 2)
		for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (!strcmp(name, need[i]))
				got[i] = value;
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (got[i] == NONE) {
			fprintf(stderr, "offsets-probe: %s not measured\n",
				need[i]);
			return -1;
		}
		field(need[i], got[i]);
	}
	return 0;
}
#endif

/*
 * Where instance attributes live: the dict of an object, or (3.11+) the
 * values array its type's shared keys index, found through pointers
 * kept before the object or inline after its header.  The inline
 * helpers of pycore_object.h locate them on a stand-in object.
 */
static int attribute_fields(void)
{
	field("type_flags", OFF(PyTypeObject, tp_flags));
	field("type_dictoffset", OFF(PyTypeObject, tp_dictoffset));
	field("heaptype_cached_keys", OFF(PyHeapTypeObject, ht_cached_keys));
	field("dict_keys", OFF(PyDictObject, ma_keys));
	field("dict_values", OFF(PyDictObject, ma_values));
#if PY_VERSION_HEX >= 0x030B0000
	{
		static PyTypeObject type;
		static PyObject objs[8];
		PyObject *obj = &objs[4];
		char *at = (char *)obj;

		type.tp_flags = Py_TPFLAGS_MANAGED_DICT;
#if PY_VERSION_HEX >= 0x030D0000
		type.tp_flags |= Py_TPFLAGS_INLINE_VALUES;
#endif
		type.tp_basicsize = sizeof(PyObject);
		Py_SET_TYPE(obj, &type);
		field("tpflags_managed_dict", (long)Py_TPFLAGS_MANAGED_DICT);
#if PY_VERSION_HEX >= 0x030D0000
		field("tpflags_inline_values", (long)Py_TPFLAGS_INLINE_VALUES);
		field("managed_dict_at",
		      (long)((char *)_PyObject_ManagedDictPointer(obj) - at));
		field("managed_values_at", NONE);
		field("managed_values_untag", NONE);
		field("inline_values_at",
		      (long)((char *)_PyObject_InlineValues(obj) - at));
		field("dictvalues_valid", OFF(PyDictValues, valid));
#elif PY_VERSION_HEX >= 0x030C0000
		{
			/* One word: a dict, or values tagged by the low bit. */
			static PyDictValues values;
			PyDictOrValues dorv;
			long at_dorv =
			    (long)((char *)_PyObject_DictOrValuesPointer(obj) -
				   at);

			_PyDictOrValues_SetValues(&dorv, &values);
			field("tpflags_inline_values", NONE);
			field("managed_dict_at", at_dorv);
			field("managed_values_at", at_dorv);
			field("managed_values_untag",
			      (long)((char *)_PyDictOrValues_GetValues(dorv) -
				     (char *)dorv.values));
		}
		field("inline_values_at", NONE);
		field("dictvalues_valid", NONE);
#else
		field("tpflags_inline_values", NONE);
		field("managed_dict_at",
		      (long)((char *)_PyObject_ManagedDictPointer(obj) - at));
		field("managed_values_at",
		      (long)((char *)_PyObject_ValuesPointer(obj) - at));
		field("managed_values_untag", NONE);
		field("inline_values_at", NONE);
		field("dictvalues_valid", NONE);
#endif
	}
	field("dictkeys_size", NONE);
	field("dictkeys_log2_size", OFF(PyDictKeysObject, dk_log2_size));
	field("dictkeys_log2_index_bytes",
	      OFF(PyDictKeysObject, dk_log2_index_bytes));
	field("dictkeys_kind", OFF(PyDictKeysObject, dk_kind));
	field("dictkeys_kind_general", (long)DICT_KEYS_GENERAL);
	field("dictkeys_nentries", OFF(PyDictKeysObject, dk_nentries));
	field("dictkeys_indices", OFF(PyDictKeysObject, dk_indices));
	field("dictentry_size", (long)sizeof(PyDictKeyEntry));
	field("dictentry_key", OFF(PyDictKeyEntry, me_key));
	field("dictentry_value", OFF(PyDictKeyEntry, me_value));
	field("unientry_size", (long)sizeof(PyDictUnicodeEntry));
	field("unientry_key", OFF(PyDictUnicodeEntry, me_key));
	field("unientry_value", OFF(PyDictUnicodeEntry, me_value));
	field("dictvalues_values", OFF(PyDictValues, values));
#else
	field("tpflags_managed_dict", NONE);
	field("tpflags_inline_values", NONE);
	field("managed_dict_at", NONE);
	field("managed_values_at", NONE);
	field("managed_values_untag", NONE);
	field("inline_values_at", NONE);
	field("dictvalues_valid", NONE);
	if (measured_fields())
		return -1;
	field("dictkeys_log2_size", NONE);
	field("dictkeys_log2_index_bytes", NONE);
	field("dictkeys_kind", NONE);
	field("dictkeys_kind_general", NONE);
	field("unientry_size", NONE);
	field("unientry_key", NONE);
	field("unientry_value", NONE);
	/* ma_values is a plain array of PyObject * */
	field("dictvalues_values", 0);
#endif
	return 0;
}

int main(int argc, char **argv)
{
	const char *ident = argc > 1 ? argv[1] : "unknown";
	/* "patch": a table for this patch release only (a layout change). */
	int patch = argc > 2 && !strcmp(argv[2], "patch");
	unsigned long minor = PY_VERSION_HEX & 0xFFFF0000UL;
	unsigned long first = patch ? PY_VERSION_HEX & 0xFFFFFF00UL : minor;
	unsigned long last = patch ? first | 0xFFUL : minor | 0xFFFFUL;

	/* What scripts/dict-layout.py needs to find a dict's keys. */
	if (!strcmp(ident, "--dict-keys-at")) {
		printf("%ld\n", OFF(PyDictObject, ma_keys));
		return 0;
	}

	printf("/* SPDX-License-Identifier: MIT */\n");
#ifdef Py_GIL_DISABLED
	printf("/* Struct offsets of CPython %s, free-threaded; generated by "
	       "scripts/gen-offsets, do not edit. */\n",
	       PY_VERSION);
#else
	printf("/* Struct offsets of CPython %s; generated by "
	       "scripts/gen-offsets, do not edit. */\n",
	       PY_VERSION);
#endif
	printf("#include <stddef.h>\n\n#include \"offsets.h\"\n\n");
#if PY_VERSION_HEX >= 0x030D0000
	printf("static const struct py_debug_field debug_fields_%s[] = {\n",
	       ident);
	DEBUG_FIELD(runtime_interpreters_head, runtime_state.interpreters_head);
	DEBUG_FIELD(interp_next, interpreter_state.next);
	DEBUG_FIELD(interp_threads_head, interpreter_state.threads_head);
	DEBUG_FIELD(interp_gil, interpreter_state.gil_runtime_state);
	DEBUG_FIELD(gil_locked, interpreter_state.gil_runtime_state_locked);
	DEBUG_FIELD(gil_last_holder,
		    interpreter_state.gil_runtime_state_holder);
	DEBUG_FIELD(tstate_size, thread_state.size);
	DEBUG_FIELD(tstate_next, thread_state.next);
	DEBUG_FIELD(tstate_interp, thread_state.interp);
	DEBUG_FIELD(tstate_current_frame, thread_state.current_frame);
	DEBUG_FIELD(tstate_thread_id, thread_state.thread_id);
	DEBUG_FIELD(tstate_native_thread_id, thread_state.native_thread_id);
	DEBUG_FIELD(tstate_datastack_chunk, thread_state.datastack_chunk);
#if PY_VERSION_HEX >= 0x030F0000
	DEBUG_FIELD(tstate_base_frame, thread_state.base_frame);
#endif
	DEBUG_FIELD(iframe_size, interpreter_frame.size);
	DEBUG_FIELD(iframe_previous, interpreter_frame.previous);
	DEBUG_FIELD(iframe_code, interpreter_frame.executable);
	DEBUG_FIELD(iframe_instr, interpreter_frame.instr_ptr);
	DEBUG_FIELD(iframe_owner, interpreter_frame.owner);
	DEBUG_FIELD(code_size, code_object.size);
	DEBUG_FIELD(code_filename, code_object.filename);
	DEBUG_FIELD(code_name, code_object.name);
	DEBUG_FIELD(code_qualname, code_object.qualname);
	DEBUG_FIELD(code_linetable, code_object.linetable);
	DEBUG_FIELD(code_firstlineno, code_object.firstlineno);
	DEBUG_FIELD(code_code_adaptive, code_object.co_code_adaptive);
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
	/* Published as 0 by builds with the GIL, which have no TLBC (nor
	 * has 3.13t: thread-local bytecode came with 3.14). */
	DEBUG_FIELD(code_tlbc, code_object.co_tlbc);
	DEBUG_FIELD(iframe_tlbc_index, interpreter_frame.tlbc_index);
#endif
	DEBUG_FIELD(object_type, pyobject.ob_type);
	DEBUG_FIELD(type_name, type_object.tp_name);
	DEBUG_FIELD(var_size, bytes_object.ob_size);
	DEBUG_FIELD(bytes_sval, bytes_object.ob_sval);
	DEBUG_FIELD(unicode_state, unicode_object.state);
	DEBUG_FIELD(unicode_length, unicode_object.length);
	DEBUG_FIELD(ascii_size, unicode_object.asciiobject_size);
#if PY_VERSION_HEX >= 0x030E0000
	DEBUG_FIELD(interp_threads_main, interpreter_state.threads_main);
	DEBUG_FIELD(interp_remote_debug,
		    debugger_support.remote_debugging_enabled);
	DEBUG_FIELD(tstate_eval_breaker, debugger_support.eval_breaker);
	DEBUG_FIELD(tstate_remote_debugger_support,
		    debugger_support.remote_debugger_support);
	DEBUG_FIELD(debugger_pending_call,
		    debugger_support.debugger_pending_call);
	DEBUG_FIELD(debugger_script_path,
		    debugger_support.debugger_script_path);
	DEBUG_FIELD(debugger_script_path_size,
		    debugger_support.debugger_script_path_size);
#endif
	printf("};\n\n");
#endif
	printf("const struct py_offsets py_offsets_%s = {\n", ident);
	printf("\t.version = \"%s\",\n", PY_VERSION);
	printf("\t.hexversion = 0x%08lxUL,\n", (unsigned long)PY_VERSION_HEX);
	printf("\t.first_hex = 0x%08lxUL,\n", first);
	printf("\t.last_hex = 0x%08lxUL,\n", last);
#ifdef Py_GIL_DISABLED
	field("free_threaded", 1);
#else
	field("free_threaded", 0);
#endif

#if PY_VERSION_HEX >= 0x03070000
	field("runtime_interpreters_head",
	      OFF(_PyRuntimeState, interpreters.head));
#else
	field("runtime_interpreters_head", NONE);
#endif
	field("interp_next", OFF(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030B0000
	field("interp_threads_head", OFF(PyInterpreterState, threads.head));
#else
	field("interp_threads_head", OFF(PyInterpreterState, tstate_head));
#endif

	field("tstate_size", (long)sizeof(PyThreadState));
	field("tstate_next", OFF(PyThreadState, next));
	field("tstate_interp", OFF(PyThreadState, interp));
#if PY_VERSION_HEX < 0x030B0000
	field("tstate_frame", OFF(PyThreadState, frame));
	field("tstate_cframe", NONE);
	field("tstate_current_frame", NONE);
#elif PY_VERSION_HEX < 0x030D0000
	field("tstate_frame", NONE);
	field("tstate_cframe", OFF(PyThreadState, cframe));
	field("tstate_current_frame", NONE);
#else
	field("tstate_frame", NONE);
	field("tstate_cframe", NONE);
	field("tstate_current_frame", OFF(PyThreadState, current_frame));
#endif
	field("tstate_thread_id", OFF(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
	field("tstate_native_thread_id", OFF(PyThreadState, native_thread_id));
#else
	field("tstate_native_thread_id", NONE);
#endif
#if PY_VERSION_HEX >= 0x030D0000
	field("tstate_state", OFF(PyThreadState, state));
	field("thread_attached", (long)_Py_THREAD_ATTACHED);
#else
	field("tstate_state", NONE);
	field("thread_attached", NONE);
#endif
#if PY_VERSION_HEX >= 0x030B0000
	field("tstate_datastack_chunk", OFF(PyThreadState, datastack_chunk));
	field("tstate_datastack_top", OFF(PyThreadState, datastack_top));
#else
	field("tstate_datastack_chunk", NONE);
	field("tstate_datastack_top", NONE);
#endif
#if PY_VERSION_HEX >= 0x030F0000
	field("tstate_base_frame", OFF(PyThreadState, base_frame));
#else
	field("tstate_base_frame", NONE);
#endif

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
	field("cframe_current_frame", OFF(_PyCFrame, current_frame));
#else
	field("cframe_current_frame", NONE);
#endif

#if PY_VERSION_HEX < 0x030B0000
	field("frame_size", (long)sizeof(PyFrameObject));
	field("frame_back", OFF(PyFrameObject, f_back));
	field("frame_code", OFF(PyFrameObject, f_code));
	field("frame_lasti", OFF(PyFrameObject, f_lasti));
	field("frame_refcnt", OFF(PyObject, ob_refcnt));
#if PY_VERSION_HEX >= 0x030A0000
	field("frame_executing", OFF(PyFrameObject, f_state));
	field("frame_executing_value", (long)FRAME_EXECUTING);
#else
	field("frame_executing", OFF(PyFrameObject, f_executing));
	field("frame_executing_value", 1);
#endif
#else
	field("frame_size", NONE);
	field("frame_back", NONE);
	field("frame_code", NONE);
	field("frame_lasti", NONE);
	field("frame_refcnt", NONE);
	field("frame_executing", NONE);
	field("frame_executing_value", NONE);
#endif

#if PY_VERSION_HEX >= 0x030B0000
	field("iframe_size", (long)sizeof(_PyInterpreterFrame));
#if PY_VERSION_HEX >= 0x030D0000
	field("iframe_code", OFF(_PyInterpreterFrame, f_executable));
	field("iframe_instr", OFF(_PyInterpreterFrame, instr_ptr));
#else
	field("iframe_code", OFF(_PyInterpreterFrame, f_code));
	field("iframe_instr", OFF(_PyInterpreterFrame, prev_instr));
#endif
	field("iframe_previous", OFF(_PyInterpreterFrame, previous));
	field("iframe_owner", OFF(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
	field("iframe_is_entry", OFF(_PyInterpreterFrame, is_entry));
	field("iframe_stacktop", NONE);
#elif PY_VERSION_HEX < 0x030E0000
	field("iframe_is_entry", NONE);
	field("iframe_stacktop", OFF(_PyInterpreterFrame, stacktop));
#else
	/*
	 * 3.14 keeps a stack pointer instead, and clears it on resuming only
	 * in debug builds (_PyFrame_GetStackPointer, pycore_interpframe.h):
	 * it does not tell a running frame from a calling one.
	 */
	field("iframe_is_entry", NONE);
	field("iframe_stacktop", NONE);
#endif
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
	field("op_return_value", (long)RETURN_VALUE);
#else
	field("op_return_value", NONE);
#endif
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030E0000
	field("op_return_const", (long)RETURN_CONST);
	field("op_instrumented_return_value", (long)INSTRUMENTED_RETURN_VALUE);
	field("op_instrumented_return_const", (long)INSTRUMENTED_RETURN_CONST);
#else
	field("op_return_const", NONE);
	field("op_instrumented_return_value", NONE);
	field("op_instrumented_return_const", NONE);
#endif
	/*
	 * The owner of the frame each C-level eval call pushes first: 3.12
	 * and 3.13 call it FRAME_OWNED_BY_CSTACK; 3.14 names it
	 * FRAME_OWNED_BY_INTERPRETER (ceval.c's entry frame, and 3.15's
	 * base frame), and assigns FRAME_OWNED_BY_CSTACK to no frame.
	 */
#if PY_VERSION_HEX >= 0x030E0000
	field("owner_cstack", (long)FRAME_OWNED_BY_INTERPRETER);
#elif PY_VERSION_HEX >= 0x030C0000
	field("owner_cstack", (long)FRAME_OWNED_BY_CSTACK);
#else
	field("owner_cstack", NONE);
#endif
	field("owner_thread", (long)FRAME_OWNED_BY_THREAD);
	field("owner_generator", (long)FRAME_OWNED_BY_GENERATOR);
	field("gen_state_at", OFF(PyGenObject, gi_frame_state) -
				  OFF(PyGenObject, gi_iframe));
	field("gen_executing", (long)FRAME_EXECUTING);
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
	field("iframe_tlbc_index", OFF(_PyInterpreterFrame, tlbc_index));
	field("code_tlbc", OFF(PyCodeObject, co_tlbc));
	field("codearray_size", OFF(_PyCodeArray, size));
	field("codearray_entries", OFF(_PyCodeArray, entries));
#else
	field("iframe_tlbc_index", NONE);
	field("code_tlbc", NONE);
	field("codearray_size", NONE);
	field("codearray_entries", NONE);
#endif
	field("gen_iframe", OFF(PyGenObject, gi_iframe));
#if PY_VERSION_HEX >= 0x030E0000
	/* What --async needs to follow a coroutine's await. */
	field("gen_yield_from", (long)FRAME_SUSPENDED_YIELD_FROM);
	field("gen_cleared", (long)FRAME_CLEARED);
	field("iframe_stackpointer", OFF(_PyInterpreterFrame, stackpointer));
#else
	field("gen_yield_from", NONE);
	field("gen_cleared", NONE);
	field("iframe_stackpointer", NONE);
#endif
#if PY_VERSION_HEX >= 0x030F0000
	field("gen_yield_from_locked",
	      (long)FRAME_SUSPENDED_YIELD_FROM_LOCKED);
#elif PY_VERSION_HEX >= 0x030E0000
	/* No locked state of its own: the same value, so a plain test. */
	field("gen_yield_from_locked", (long)FRAME_SUSPENDED_YIELD_FROM);
#else
	field("gen_yield_from_locked", NONE);
#endif
	field("chunk_previous", OFF(_PyStackChunk, previous));
	field("chunk_size", OFF(_PyStackChunk, size));
	field("chunk_top", OFF(_PyStackChunk, top));
	field("chunk_data", OFF(_PyStackChunk, data));
#else
	field("iframe_size", NONE);
	field("iframe_code", NONE);
	field("iframe_instr", NONE);
	field("iframe_previous", NONE);
	field("iframe_owner", NONE);
	field("iframe_is_entry", NONE);
	field("iframe_stacktop", NONE);
	field("op_return_value", NONE);
	field("op_return_const", NONE);
	field("op_instrumented_return_value", NONE);
	field("op_instrumented_return_const", NONE);
	field("owner_cstack", NONE);
	field("owner_thread", NONE);
	field("owner_generator", NONE);
	field("gen_state_at", NONE);
	field("gen_executing", NONE);
	field("gen_iframe", NONE);
	field("gen_yield_from", NONE);
	field("gen_cleared", NONE);
	field("iframe_stackpointer", NONE);
	field("gen_yield_from_locked", NONE);
	field("chunk_previous", NONE);
	field("chunk_size", NONE);
	field("chunk_top", NONE);
	field("chunk_data", NONE);
	field("iframe_tlbc_index", NONE);
	field("code_tlbc", NONE);
	field("codearray_size", NONE);
	field("codearray_entries", NONE);
#endif

	/* The GIL: embedded in _PyRuntime.ceval (3.7-3.11), or pointed to by
	 * the interpreter's ceval (3.12+); 3.6 keeps it in static variables. */
#if PY_VERSION_HEX >= 0x030C0000
	field("runtime_gil", NONE);
	field("interp_gil_ptr", OFF(PyInterpreterState, ceval.gil));
#elif PY_VERSION_HEX >= 0x03070000
	field("runtime_gil", OFF(_PyRuntimeState, ceval.gil));
	field("interp_gil_ptr", NONE);
#else
	field("runtime_gil", NONE);
	field("interp_gil_ptr", NONE);
#endif
#if PY_VERSION_HEX >= 0x030C0000
	field("interp_gil", OFF(PyInterpreterState, _gil));
#else
	field("interp_gil", NONE);
#endif
#if PY_VERSION_HEX >= 0x03070000
	field("gil_size", (long)sizeof(struct _gil_runtime_state));
	field("gil_locked", OFF(struct _gil_runtime_state, locked));
	field("gil_last_holder", OFF(struct _gil_runtime_state, last_holder));
#ifdef Py_GIL_DISABLED
	field("gil_enabled", OFF(struct _gil_runtime_state, enabled));
#else
	field("gil_enabled", NONE);
#endif
#else
	field("gil_size", NONE);
	field("gil_locked", NONE);
	field("gil_last_holder", NONE);
	field("gil_enabled", NONE);
#endif

	/* int collecting of the cycle collector's state: in _PyRuntime
	 * (3.7-3.8), in each interpreter (3.9+); 3.6 keeps it in a static
	 * variable, found by its symbol. */
#if PY_VERSION_HEX >= 0x03090000
	field("runtime_gc_collecting", NONE);
	field("interp_gc_collecting",
	      OFF(PyInterpreterState, gc) +
		  OFF(struct _gc_runtime_state, collecting));
#elif PY_VERSION_HEX >= 0x03070000
	field("runtime_gc_collecting",
	      OFF(_PyRuntimeState, gc) +
		  OFF(struct _gc_runtime_state, collecting));
	field("interp_gc_collecting", NONE);
#else
	field("runtime_gc_collecting", NONE);
	field("interp_gc_collecting", NONE);
#endif

	field("code_size", (long)sizeof(PyCodeObject));
	field("code_filename", OFF(PyCodeObject, co_filename));
	field("code_name", OFF(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
	field("code_qualname", OFF(PyCodeObject, co_qualname));
#else
	field("code_qualname", NONE);
#endif
	field("code_firstlineno", OFF(PyCodeObject, co_firstlineno));
	field("code_flags", OFF(PyCodeObject, co_flags));
#if PY_VERSION_HEX >= 0x030A0000
	field("code_linetable", OFF(PyCodeObject, co_linetable));
#else
	field("code_linetable", OFF(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030B0000
	field("code_code_adaptive", OFF(PyCodeObject, co_code_adaptive));
#if PY_VERSION_HEX >= 0x030C0000
	field("code_framesize", OFF(PyCodeObject, co_framesize));
#else
	field("code_framesize", NONE);
#endif
	field("code_nlocalsplus", OFF(PyCodeObject, co_nlocalsplus));
	field("code_stacksize", OFF(PyCodeObject, co_stacksize));
	field("frame_specials", (long)FRAME_SPECIALS_SIZE);
#else
	field("code_code_adaptive", NONE);
	field("code_framesize", NONE);
	field("code_nlocalsplus", NONE);
	field("code_stacksize", NONE);
	field("frame_specials", NONE);
#endif

#if PY_VERSION_HEX >= 0x030B0000
	field("frame_localsplus", NONE);
	field("iframe_localsplus", OFF(_PyInterpreterFrame, localsplus));
#else
	field("frame_localsplus", OFF(PyFrameObject, f_localsplus));
	field("iframe_localsplus", NONE);
#endif
	if (attribute_fields())
		return 1;

	field("object_type", OFF(PyObject, ob_type));
	field("var_size", OFF(PyVarObject, ob_size));
	field("type_name", OFF(PyTypeObject, tp_name));
	field("bytes_sval", OFF(PyBytesObject, ob_sval));
#if PY_VERSION_HEX >= 0x030E0000
	/* An asyncio task's name may be an int; its awaiters may be a set. */
	field("long_tag", OFF(PyLongObject, long_value.lv_tag));
	field("long_digits", OFF(PyLongObject, long_value.ob_digit));
	field("set_used", OFF(PySetObject, used));
	field("set_mask", OFF(PySetObject, mask));
	field("set_table", OFF(PySetObject, table));
	field("set_entry_size", (long)sizeof(setentry));
#else
	field("long_tag", NONE);
	field("long_digits", NONE);
	field("set_used", NONE);
	field("set_mask", NONE);
	field("set_table", NONE);
	field("set_entry_size", NONE);
#endif

	field("ascii_size", (long)sizeof(PyASCIIObject));
	field("compact_size", (long)sizeof(PyCompactUnicodeObject));
	field("unicode_length", OFF(PyASCIIObject, length));
	field("unicode_state", OFF(PyASCIIObject, state));
	field("unicode_data", OFF(PyUnicodeObject, data));
	field("state_kind_shift", STATE_SHIFT(kind));
	field("state_compact_shift", STATE_SHIFT(compact));
	field("state_ascii_shift", STATE_SHIFT(ascii));
	/*
	 * PEP 768 remote execution (3.14+): what sys.remote_exec() writes
	 * (Python/remote_debugging.c) and _PyRunRemoteDebugger() reads.
	 */
#if PY_VERSION_HEX >= 0x030E0000
	field("interp_threads_main", OFF(PyInterpreterState, threads.main));
	field("interp_remote_debug",
	      OFF(PyInterpreterState, config.remote_debug));
	field("tstate_eval_breaker", OFF(PyThreadState, eval_breaker));
	field("eval_please_stop_bit", (long)_PY_EVAL_PLEASE_STOP_BIT);
	field("tstate_remote_debugger_support",
	      OFF(PyThreadState, remote_debugger_support));
	field("debugger_pending_call",
	      OFF(_PyRemoteDebuggerSupport, debugger_pending_call));
	field("debugger_script_path",
	      OFF(_PyRemoteDebuggerSupport, debugger_script_path));
	field("debugger_script_path_size",
	      (long)sizeof(
		  ((_PyRemoteDebuggerSupport *)0)->debugger_script_path));
#else
	field("interp_threads_main", NONE);
	field("interp_remote_debug", NONE);
	field("tstate_eval_breaker", NONE);
	field("eval_please_stop_bit", NONE);
	field("tstate_remote_debugger_support", NONE);
	field("debugger_pending_call", NONE);
	field("debugger_script_path", NONE);
	field("debugger_script_path_size", NONE);
#endif
#if PY_VERSION_HEX >= 0x030D0000
	field("debug_size", (long)sizeof(_Py_DebugOffsets));
	field("debug_version_at", OFF(_Py_DebugOffsets, version));
	field("debug_free_threaded_at", OFF(_Py_DebugOffsets, free_threaded));
	printf("\t.debug_fields = debug_fields_%s,\n", ident);
	printf("\t.nr_debug_fields = sizeof(debug_fields_%s) / "
	       "sizeof(debug_fields_%s[0]),\n",
	       ident, ident);
#else
	field("debug_size", NONE);
	field("debug_version_at", NONE);
	field("debug_free_threaded_at", NONE);
#endif
	printf("};\n");
	return 0;
}
