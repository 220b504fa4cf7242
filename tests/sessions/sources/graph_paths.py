"""Shortest paths on a weighted directed graph."""
import heapq


class Graph:
    def __init__(self):
        self.edges = {}

    def add_edge(self, source, target, weight=1.0):
        if weight < 0:
            raise ValueError("Dijkstra needs non-negative weights")
        self.edges.setdefault(source, []).append((target, weight))
        self.edges.setdefault(target, [])

    def shortest_paths(self, start):
        distances = {start: 0.0}
        previous = {}
        queue = [(0.0, start)]
        while queue:
            distance, node = heapq.heappop(queue)
            if distance > distances.get(node, float("inf")):
                continue
            for neighbor, weight in self.edges.get(node, []):
                candidate = distance + weight
                if candidate < distances.get(neighbor, float("inf")):
                    distances[neighbor] = candidate
                    previous[neighbor] = node
                    heapq.heappush(queue, (candidate, neighbor))
        return distances, previous

    def path(self, start, goal):
        distances, previous = self.shortest_paths(start)
        if goal not in distances:
            return None
        nodes = [goal]
        while nodes[-1] != start:
            nodes.append(previous[nodes[-1]])
        nodes.reverse()
        return nodes
