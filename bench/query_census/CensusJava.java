// The independent census of Java: the queries at known database calls, read with the JDK's own
// parser (the compiler tree API), not Sluice's tree-sitter code. Prints one JSON object a line:
// {"file", "line", "kind": "literal"|"constant"|"dynamic"|"jpql", "call"}.
//
// Usage: java CensusJava.java FILE...
import com.sun.source.tree.*;
import com.sun.source.util.*;
import java.io.File;
import java.util.*;
import javax.tools.*;

public class CensusJava {
    static final Set<String> METHODS = Set.of("query", "queryForObject", "queryForList", "queryForMap",
        "queryForRowSet", "queryForStream", "update", "batchUpdate", "execute", "createNativeQuery",
        "prepareStatement", "prepareCall", "executeQuery", "executeUpdate", "addBatch");
    static final Set<String> KEYWORDS = Set.of("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER",
        "DROP", "TRUNCATE", "COPY", "CALL", "SET", "LOCK", "VALUES", "MERGE", "REFRESH", "VACUUM", "ANALYZE");

    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StandardJavaFileManager files = compiler.getStandardFileManager(null, null, null);
        for (String path : args) {
            JavacTask task = (JavacTask) compiler.getTask(null, files, d -> {}, List.of("-proc:none"), null,
                files.getJavaFileObjects(new File(path)));
            for (CompilationUnitTree unit : task.parse()) {
                census(path, unit, Trees.instance(task).getSourcePositions());
            }
        }
    }

    static void census(String path, CompilationUnitTree unit, SourcePositions positions) {
        Map<String, List<ExpressionTree>> values = new HashMap<>();
        new TreeScanner<Void, Void>() {
            @Override public Void visitVariable(VariableTree v, Void p) {
                if (v.getInitializer() != null) values.computeIfAbsent(v.getName().toString(), k -> new ArrayList<>()).add(v.getInitializer());
                return super.visitVariable(v, p);
            }
            @Override public Void visitAssignment(AssignmentTree a, Void p) {
                String name = a.getVariable() instanceof IdentifierTree i ? i.getName().toString()
                    : a.getVariable() instanceof MemberSelectTree m ? m.getIdentifier().toString() : null;
                if (name != null) values.computeIfAbsent(name, k -> new ArrayList<>()).add(null);
                return super.visitAssignment(a, p);
            }
        }.scan(unit, null);
        String imports = unit.getImports().toString();
        boolean mybatis = imports.contains("org.apache.ibatis");
        boolean jdbcQuery = imports.contains("data.jdbc.repository.query") || imports.contains("data.r2dbc.repository");
        new TreeScanner<Void, Void>() {
            @Override public Void visitAnnotation(AnnotationTree a, Void p) {
                String name = a.getAnnotationType().toString();
                name = name.substring(name.lastIndexOf('.') + 1);
                boolean query = name.equals("Query");
                boolean sql = name.equals("NamedNativeQuery") || (mybatis && Set.of("Select", "Insert", "Update", "Delete").contains(name));
                if (query || sql) {
                    boolean nativeQuery = false;
                    List<ExpressionTree> texts = new ArrayList<>();
                    for (ExpressionTree arg : a.getArguments()) {
                        if (arg instanceof AssignmentTree as) {
                            String key = as.getVariable().toString();
                            if (key.equals("nativeQuery")) nativeQuery = as.getExpression().toString().equals("true");
                            if (key.equals("value") || key.equals("countQuery") || key.equals("query")) texts.add(as.getExpression());
                        } else texts.add(arg);
                    }
                    for (ExpressionTree text : texts) {
                        if (text instanceof NewArrayTree array && !array.getInitializers().isEmpty()) text = array.getInitializers().get(0);
                        String kind = classify(text, values, 0);
                        if (query && !nativeQuery && !jdbcQuery) kind = "jpql";
                        emit(path, unit, positions, first(text, values, 0), kind, "@" + name);
                    }
                }
                return super.visitAnnotation(a, p);
            }
            @Override public Void visitMethodInvocation(MethodInvocationTree m, Void p) {
                String name = m.getMethodSelect() instanceof MemberSelectTree s ? s.getIdentifier().toString() : "";
                if (METHODS.contains(name) && !m.getArguments().isEmpty()) {
                    ExpressionTree arg = m.getArguments().get(0);
                    String kind = classify(arg, values, 0);
                    ExpressionTree literal = first(arg, values, 0);
                    if (kind != null && literal instanceof LiteralTree l && l.getValue() instanceof String text && sqlLike(text)) {
                        emit(path, unit, positions, literal, kind, name);
                    }
                }
                return super.visitMethodInvocation(m, p);
            }
        }.scan(unit, null);
    }

    static void emit(String path, CompilationUnitTree unit, SourcePositions positions, Tree at, String kind, String call) {
        long line = unit.getLineMap().getLineNumber(positions.getStartPosition(unit, at));
        System.out.printf("{\"file\": \"%s\", \"line\": %d, \"kind\": \"%s\", \"call\": \"%s\"}%n", path, line, kind, call);
    }

    static String classify(ExpressionTree e, Map<String, List<ExpressionTree>> values, int depth) {
        if (depth > 10) return "dynamic";
        if (e instanceof LiteralTree l) return l.getValue() instanceof String ? "literal" : null;
        if (e instanceof ParenthesizedTree p) return classify(p.getExpression(), values, depth);
        if (e instanceof BinaryTree b && b.getKind() == Tree.Kind.PLUS) {
            String l = classify(b.getLeftOperand(), values, depth), r = classify(b.getRightOperand(), values, depth);
            if (l == null || r == null || l.equals("dynamic") || r.equals("dynamic")) return "dynamic";
            return l.equals("constant") || r.equals("constant") ? "constant" : "literal";
        }
        String name = e instanceof IdentifierTree i ? i.getName().toString() : e instanceof MemberSelectTree m ? m.getIdentifier().toString() : null;
        if (name != null) {
            List<ExpressionTree> vs = values.getOrDefault(name, List.of());
            if (vs.size() == 1 && vs.get(0) != null) {
                String k = classify(vs.get(0), values, depth + 1);
                return k == null ? null : k.equals("dynamic") ? "dynamic" : "constant";
            }
            return vs.size() > 1 ? "dynamic" : null;
        }
        if (e instanceof MethodInvocationTree) return "dynamic";
        return null;
    }

    static ExpressionTree first(ExpressionTree e, Map<String, List<ExpressionTree>> values, int depth) {
        if (depth > 10) return e;
        if (e instanceof ParenthesizedTree p) return first(p.getExpression(), values, depth);
        if (e instanceof BinaryTree b) return first(b.getLeftOperand(), values, depth);
        if (e instanceof MethodInvocationTree m && !m.getArguments().isEmpty()) return first(m.getArguments().get(0), values, depth);
        String name = e instanceof IdentifierTree i ? i.getName().toString() : e instanceof MemberSelectTree m ? m.getIdentifier().toString() : null;
        if (name != null) {
            List<ExpressionTree> vs = values.getOrDefault(name, List.of());
            if (!vs.isEmpty() && vs.get(0) != null) return first(vs.get(0), values, depth + 1);
        }
        return e;
    }

    static boolean sqlLike(String text) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^[\\s(]*([A-Za-z]+)\\s+\\S").matcher(text);
        return m.find() && KEYWORDS.contains(m.group(1).toUpperCase());
    }
}
